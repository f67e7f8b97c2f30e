package main

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestTuneMemoryLimitsTheHeap: the soft memory limit is a share of the
// container's limit, or of the machine's memory outside a container, and
// GOMEMLIMIT, when set, is left alone.
func TestTuneMemoryLimitsTheHeap(t *testing.T) {
	prevLimit := debug.SetMemoryLimit(-1)
	prevGC := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevGC)
	})
	quiet := slog.New(slog.DiscardHandler)

	debug.SetMemoryLimit(math.MaxInt64)
	tuneMemory(400, 0.5, func(string) string { return "" }, quiet)
	total, err := memlimit.FromCgroup()
	if err != nil {
		if total, err = memlimit.FromSystem(); err != nil {
			t.Skipf("neither a cgroup limit nor the machine's memory can be read: %v", err)
		}
	}
	want := int64(float64(total) * 0.5)
	if got := debug.SetMemoryLimit(-1); got < want-1<<20 || got > want+1<<20 {
		t.Errorf("memory limit %d, want about half of %d", got, total)
	}
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GC percent %d, want 400", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	env := map[string]string{"GOMEMLIMIT": "1GiB", "GOGC": "50"}
	tuneMemory(400, 0.5, func(k string) string { return env[k] }, quiet)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d set over GOMEMLIMIT", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d set over GOGC", got)
	}
}
