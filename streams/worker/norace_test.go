//go:build !race

package worker

// raceEnabled reports whether the tests run under the race detector, which
// slows the lanes tenfold or more.
const raceEnabled = false
