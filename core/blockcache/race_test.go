//go:build race

package blockcache

// raceEnabled shortens the model test under the race detector.
const raceEnabled = true
