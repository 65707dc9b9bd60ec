//go:build race

package replay

// raceBuild is true when the tests run under the race detector, which
// makes the replays of every shared transcript take minutes: they then
// replay a subset (see replayFiles).
const raceBuild = true
