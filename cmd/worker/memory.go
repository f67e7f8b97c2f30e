package main

import (
	"log/slog"
	"math"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/convstream/convstream/internal/hugepages"
)

// defaultGCPercent is the garbage collector's target (GOGC) unless GOGC or
// --gc-percent say otherwise. The worker allocates per event far more
// than it keeps (decoded events, deltas, snapshots), so collecting at 4x
// the live heap rather than 1x saves about a sixth of its CPU at peak
// (BENCHMARKS.md); the soft memory limit below keeps a container from
// paying for it in memory.
const defaultGCPercent = 400

// tuneMemory sets the collector's target (when GOGC is not set) and a soft
// memory limit at ratio of the container's memory limit (cgroup), or of
// the machine's memory when there is none (when GOMEMLIMIT is not set and
// ratio is positive), near which the collector works harder instead of
// the heap growing further. It logs the settings, with the system's mode of
// transparent huge pages.
func tuneMemory(gcPercent int, ratio float64, getenv func(string) string, log *slog.Logger) {
	attrs := []any{"gogc", getenv("GOGC")}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
		attrs[1] = gcPercent
	}
	if ratio > 0 && getenv("GOMEMLIMIT") == "" {
		// Outside a container the heap, which grows to 1 + gcPercent/100
		// times the live heap between collections, is held to the
		// machine instead of growing until the kernel kills the process.
		limits := memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)
		if _, err := memlimit.Set(memlimit.WithRatio(ratio), memlimit.WithProvider(limits), memlimit.WithLogger(log)); err != nil {
			log.Warn("memory limit not set", "err", err)
		}
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 { // -1 reads it
		attrs = append(attrs, "memory_limit", limit)
	}
	thp := hugepages.Mode()
	if thp != "" {
		attrs = append(attrs, "transparent_huge_pages", thp)
	}
	log.Info("garbage collector", attrs...)
	// A heap on 4 KiB pages takes a page fault for each 4 KiB it grows
	// into: on the 2-core machines of BENCHMARKS.md that alone kept the
	// latency tail at half of peak over 20 ms.
	if thp != "" && (!hugepages.HeapOnHugePages(thp) || strings.Contains(getenv("GODEBUG"), "disablethp=1")) {
		log.Info("the heap is on 4 KiB pages, which costs latency under load (docs/operations.md, \"Huge pages\")", "transparent_huge_pages", thp, "godebug", getenv("GODEBUG"))
	}
}
