package main

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/convstream/convstream/internal/hugepages"
)

// defaultGCPercent is the garbage collector's target (GOGC) unless GOGC or
// --gc-percent say otherwise. The worker allocates per event far more
// than it keeps (decoded events, deltas, snapshots): at 100 the background
// collector took 14% of its CPU profile flat out against 3% at 400, and at
// 200 it missed the p99 goal at half of peak in every sequence where 400
// met it, while 1000 and 2000 gained nothing for more memory
// (docs/operations.md, "Tuning", which names the bench/EXPERIMENTS.md
// sections); the soft memory limit below keeps a container from paying for
// it in memory. TestTuneMemoryLimitsTheHeap checks that it is set.
const defaultGCPercent = 400

// autoHeapHugePages asks tuneMemory for hugepages.DefaultHeapAdvice.
const autoHeapHugePages = -1

// parseHeapHugePages reads --heap-huge-pages: "auto", "off", or a size.
func parseHeapHugePages(s string) (int64, error) {
	switch s {
	case "auto":
		return autoHeapHugePages, nil
	case "off":
		return 0, nil
	}
	var n byteSize
	if err := n.Set(s); err != nil {
		return 0, fmt.Errorf("--heap-huge-pages: %w (or auto, or off)", err)
	}
	return int64(n), nil
}

// tuneMemory sets the collector's target (when GOGC is not set) and a soft
// memory limit at ratio of the container's memory limit (cgroup), or of
// the machine's memory when there is none (when GOMEMLIMIT is not set and
// ratio is positive), near which the collector works harder instead of
// the heap growing further. Where the machine's transparent huge pages
// are "madvise", it marks hugeHeap bytes of heap address space for them
// (autoHeapHugePages: by the memory limit; see hugepages.AdviseHeap). It
// logs what it set, with the machine's mode of transparent huge pages.
func tuneMemory(gcPercent int, ratio float64, hugeHeap int64, getenv func(string) string, log *slog.Logger) {
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
	limit := debug.SetMemoryLimit(-1) // -1 reads it
	if limit != math.MaxInt64 {
		attrs = append(attrs, "memory_limit", limit)
	}
	thp := hugepages.Mode()
	if thp == "" {
		log.Info("garbage collector", attrs...)
		return
	}
	attrs = append(attrs, "transparent_huge_pages", thp)
	// A heap on 4 KiB pages takes a page fault for each 4 KiB it grows
	// into: on the 2-core machines of BENCHMARKS.md that alone kept the
	// latency tail at half of peak over 20 ms.
	onHuge := hugepages.HeapOnHugePages(thp)
	if disabled := strings.Contains(getenv("GODEBUG"), "disablethp=1"); disabled {
		onHuge = false // the runtime marks its heap against them: so be it
	} else if thp == hugepages.Madvise && hugeHeap != 0 {
		if hugeHeap == autoHeapHugePages {
			hugeHeap = hugepages.DefaultHeapAdvice(limit)
		}
		if marked, err := hugepages.AdviseHeap(hugeHeap); err != nil {
			log.Warn("heap not marked for huge pages", "err", err)
		} else {
			onHuge = true
			attrs = append(attrs, "heap_huge_pages", marked)
		}
	}
	log.Info("garbage collector", attrs...)
	if !onHuge {
		log.Info("the heap is on 4 KiB pages, which costs latency under load (docs/operations.md, \"Huge pages\")", "transparent_huge_pages", thp, "godebug", getenv("GODEBUG"))
	}
}
