package wire

import "context"

type codecKey struct{}

// WithCodec returns a copy of ctx that names the codec of the request it
// is for (nil: a request of no API abridge processes), as a server
// decided it from the request's method and path: the proxy decides once,
// as a request arrives, and the middleware uses what it is given instead
// of matching the path again.
func WithCodec(ctx context.Context, c Codec) context.Context {
	return context.WithValue(ctx, codecKey{}, decision{c})
}

// decision is what WithCodec carries: a nil Codec in it is a decision too.
type decision struct{ c Codec }

// CodecOf returns the codec ctx names (see WithCodec), and whether it
// names one, nil included.
func CodecOf(ctx context.Context) (Codec, bool) {
	d, ok := ctx.Value(codecKey{}).(decision)
	return d.c, ok
}
