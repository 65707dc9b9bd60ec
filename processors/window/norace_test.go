//go:build !race

package window

// raceBuild is true when the tests run under the race detector.
const raceBuild = false
