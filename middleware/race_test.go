//go:build race

package middleware_test

// raceBuild is true when the tests run under the race detector, whose
// sync.Pool drops a quarter of what is put back: the decoders
// go-json-experiment pools are then made anew, and the allocations
// TestProcessingMemory measures are not the program's.
const raceBuild = true
