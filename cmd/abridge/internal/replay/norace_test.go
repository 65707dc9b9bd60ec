//go:build !race

package replay

// raceBuild is true when the tests run under the race detector.
const raceBuild = false
