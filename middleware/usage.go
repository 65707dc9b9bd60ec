package middleware

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
)

// maxUsageBody is the most of a whole (not streamed) answer kept to read
// its usage from; a larger answer passes with its usage unread.
const maxUsageBody = 8 << 20

// watch makes resp's body report, once read to its end or closed, the
// usage the provider put in it (EventUsage, and rep's Usage) for sent
// (nil: a request sent unprocessed), and remember it to anchor the
// conversation's next request: in a JSON answer, or in the events of a
// stream as they pass, each read by codec (nil: a request passed
// untouched, whose usage is not read). With report (rep is read), every
// answer's body notes the error a read of it broke off with
// (Report.AnswerErr). The body reaches the app as it comes, byte for byte
// and with no delay, wrapped once.
func (m *Rewriter) watch(ctx context.Context, codec wire.Codec, rep *Report, sent *sentRequest, resp *http.Response, report bool) {
	if resp.Body == nil {
		return
	}
	remember := m.anchors != nil && sent != nil && sent.remember && sent.conv.whole != 0
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	usage := codec != nil && (m.onEvent != nil || remember || report) && resp.StatusCode == http.StatusOK &&
		resp.Header.Get("Content-Encoding") == "" && (media == "application/json" || media == "text/event-stream")
	if !usage && !report {
		return
	}
	w := &answer{ReadCloser: resp.Body}
	if report {
		w.cut = &rep.AnswerErr
	}
	if usage {
		w.stream, w.read = media == "text/event-stream", codec.Usage
		w.report = func(u processor.Usage) {
			ev := Event{Type: EventUsage, API: codec.API(), Model: rep.Model, Usage: u}
			if sent != nil {
				if remember {
					m.anchors.put(sent.conv.whole, sent.messages, u)
				}
				ev.MessagesAfter, ev.TokensAfter, ev.Estimate, ev.Anchored = sent.messages, sent.tokens, sent.estimate, sent.anchored
			}
			rep.Usage, rep.UsageRead = u, true
			m.emit(ctx, ev)
		}
	}
	resp.Body = w
}

// answer is the body of an answer the middleware returns: it reads the
// usage in it as it passes (when read is set) and notes the error a read
// broke off with (when cut is set). head is what was read of it before
// (to tell an overflow), given again first.
type answer struct {
	io.ReadCloser
	head   []byte
	cut    *error
	stream bool
	read   func([]byte) (processor.Usage, bool)
	report func(processor.Usage)

	buf   []byte // a whole answer, or the stream's unfinished line
	over  bool   // the whole answer was too large to keep
	found bool
	usage processor.Usage
	once  sync.Once
}

func (w *answer) Read(p []byte) (int, error) {
	if len(w.head) > 0 {
		n := copy(p, w.head)
		w.head = w.head[n:]
		return n, nil
	}
	n, err := w.ReadCloser.Read(p)
	if w.read != nil {
		w.take(p[:n])
	}
	switch {
	case err == io.EOF:
		w.finish()
	case err != nil && w.cut != nil && *w.cut == nil:
		*w.cut = err
	}
	return n, err
}

func (w *answer) Close() error {
	w.finish()
	return w.ReadCloser.Close()
}

// take notes the bytes that passed.
func (w *answer) take(b []byte) {
	if !w.stream {
		if !w.over && len(w.buf)+len(b) > maxUsageBody {
			w.over, w.buf = true, nil
		}
		if !w.over {
			w.buf = append(w.buf, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(w.buf)+len(b) <= maxUsageBody {
				w.buf = append(w.buf, b...)
			}
			return
		}
		line := b[:i]
		if len(w.buf) > 0 {
			line = append(w.buf, line...)
			w.buf = w.buf[:0]
		}
		w.line(line)
		b = b[i+1:]
	}
}

// line reads one line of a stream: a data line holding usage adds to it.
func (w *answer) line(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	if u, ok := w.read(bytes.TrimSpace(data)); ok {
		w.add(u)
	}
}

// add merges a usage report: a stream may report its input first and its
// output at the end, so each figure is the largest seen.
func (w *answer) add(u processor.Usage) {
	w.found = true
	w.usage.InputTokens = max(w.usage.InputTokens, u.InputTokens)
	w.usage.CachedInputTokens = max(w.usage.CachedInputTokens, u.CachedInputTokens)
	w.usage.CacheWriteInputTokens = max(w.usage.CacheWriteInputTokens, u.CacheWriteInputTokens)
	w.usage.OutputTokens = max(w.usage.OutputTokens, u.OutputTokens)
}

func (w *answer) finish() {
	if w.read == nil {
		return
	}
	w.once.Do(func() {
		if !w.stream && !w.over {
			if u, ok := w.read(w.buf); ok {
				w.add(u)
			}
		}
		w.buf = nil
		if w.found {
			w.report(w.usage)
		}
	})
}
