//go:build !linux

package replay

import "time"

// threadCPU reports that thread CPU time is not measured on this system.
func threadCPU() (time.Duration, bool) { return 0, false }
