//go:build !race

package hugepages

// raceEnabled: see race.go.
const raceEnabled = false
