package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcess reads the process's CPU time around some work: it grows, and
// never goes back. How much it grows over a given wall-clock time depends
// on what else the machine runs, so the test works until it has grown
// rather than for a fixed time (a bound on it belongs in a benchmark).
func TestProcess(t *testing.T) {
	before, ok := Process()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no CPU time on Linux")
		}
		t.Skip("no CPU time here")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		now, _ := Process()
		if now < before {
			t.Fatalf("CPU time went back from %v to %v", before, now)
		}
		if now > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time still %v after a minute of work", now)
		}
		for range 100_000 { // some work between reads
			runtime.Gosched()
		}
	}
}
