//go:build !race

package middleware_test

// raceBuild is true when the tests run under the race detector.
const raceBuild = false
