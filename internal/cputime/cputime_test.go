package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcess reads the process's CPU time twice around some work: it
// grows by about as much as the work took.
func TestProcess(t *testing.T) {
	before, ok := Process()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("no CPU time on Linux")
		}
		t.Skip("no CPU time here")
	}
	busy := 50 * time.Millisecond
	for deadline := time.Now().Add(busy); time.Now().Before(deadline); {
	}
	after, _ := Process()
	if used := after - before; used < busy/2 {
		t.Errorf("CPU time grew %v over %v of work", used, busy)
	}
}
