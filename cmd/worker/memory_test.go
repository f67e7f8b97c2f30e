package main

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/convstream/convstream/internal/hugepages"
)

// keepMemorySettings puts the process's memory limit and collector target
// back as they were when t ends, and sets the target to 100 meanwhile.
func keepMemorySettings(t *testing.T) {
	prevLimit := debug.SetMemoryLimit(-1)
	prevGC := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(prevLimit)
		debug.SetGCPercent(prevGC)
	})
}

// TestTuneMemoryLimitsTheHeap: the soft memory limit is a share of the
// container's limit, or of the machine's memory outside a container, and
// GOMEMLIMIT, when set, is left alone.
func TestTuneMemoryLimitsTheHeap(t *testing.T) {
	keepMemorySettings(t)
	quiet := slog.New(slog.DiscardHandler)

	debug.SetMemoryLimit(math.MaxInt64)
	tuneMemory(400, 0.5, 0, func(string) string { return "" }, quiet)
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
	tuneMemory(400, 0.5, 0, func(k string) string { return env[k] }, quiet)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d set over GOMEMLIMIT", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d set over GOGC", got)
	}
}

// TestParseHeapHugePages reads --heap-huge-pages: auto, off or a size.
func TestParseHeapHugePages(t *testing.T) {
	for in, want := range map[string]int64{"auto": autoHeapHugePages, "off": 0, "0": 0, "512MiB": 512 << 20, "2Gi": 2 << 30, "2G": 2e9} {
		if got, err := parseHeapHugePages(in); err != nil || got != want {
			t.Errorf("parseHeapHugePages(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "on", "-1", "1XB"} {
		if _, err := parseHeapHugePages(in); err == nil {
			t.Errorf("parseHeapHugePages(%q): no error", in)
		}
	}
}

// TestTuneMemoryHugePages: where the machine's mode is madvise the heap is
// marked (or a warning says why not) and the log says how much; elsewhere,
// or with 0, nothing is tried. The log says the heap is on 4 KiB pages
// unless it is marked or the mode is always.
func TestTuneMemoryHugePages(t *testing.T) {
	keepMemorySettings(t)
	mode := hugepages.Mode()
	for _, n := range []int64{0, 64 << 20} {
		var out bytes.Buffer
		tuneMemory(100, 0, n, func(string) string { return "" }, slog.New(slog.NewJSONHandler(&out, nil)))
		// Marked once a process: a run of the worker earlier in these
		// tests may have marked its own size. Refused under the race
		// detector, among others.
		marked := strings.Contains(out.String(), `"heap_huge_pages":`)
		refused := strings.Contains(out.String(), "heap not marked for huge pages")
		if tried, want := marked || refused, mode == hugepages.Madvise && n > 0; tried != want {
			t.Errorf("mode %q, %d bytes: marked %v, refused %v; want one of them: %v; log:\n%s", mode, n, marked, refused, want, &out)
		}
		if on := !strings.Contains(out.String(), "4 KiB pages"); mode != "" && on != (marked || mode == hugepages.Always) {
			t.Errorf("mode %q, %d bytes: the log says the heap is on huge pages: %v; log:\n%s", mode, n, on, &out)
		}
	}
}
