//go:build race

package bus_test

// raceDetector: the tests run with -race.
const raceDetector = true
