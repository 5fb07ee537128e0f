//go:build race

package native

// raceEnabled shortens the longest tests under the race detector.
const raceEnabled = true
