//go:build race

package hugepages

// raceEnabled: the race detector keeps shadow memory for what the heap
// allocates, so marking a range by allocating it would cost gigabytes.
const raceEnabled = true
