package main

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/convstream/convstream/internal/cputime"
)

// On a busy machine a garbage collection's mark is what makes a latency
// tail: it takes a quarter of the process's CPU while events queue
// (bench/EXPERIMENTS.md, "every stage stalls together; stores grouped",
// and "the half-peak tail is the collections that fall in it"). A
// collection that is due soon anyway costs the events nothing when it
// runs while the process is idle. The idle collector
// watches the process's CPU time and, after a period in which the process
// used almost none, runs a collection if the heap has grown at least an
// eighth of the way from the last one's live heap to the next goal.

// defaultIdleGC is --idle-gc's default period. In four batches of four
// alternating default load sequences, the worker met the p99 goal at half
// of its peak in 12 of 16 with it and in 5 of 16 without; where it
// collected between the runs, the worker's resident memory peaked up to a
// third lower (bench/EXPERIMENTS.md, "Collections while the process is
// idle"; docs/operations.md, "Tuning"). The period itself was not compared
// with others.
const defaultIdleGC = 100 * time.Millisecond

// idleShare is the most CPU, as a share of one core, that a period may take
// and still count as idle.
const idleShare = 0.05

// idleDue: an idle period runs a collection once the heap has grown
// 1/idleDue of the way from the live heap to the goal. At halfway (2), a
// load that began with the heap just under it had half the room to the
// goal, and its collection fell under the load more often: the worker met
// the p99 goal at half of its peak in 4 of 10 default load sequences with
// halfway and in 10 of 10 with an eighth, with a peak resident memory of
// 607-912 MB against 592-838 MB (three alternating batches of make -C bench
// load-compare; bench/EXPERIMENTS.md, "The idle collector, collecting once
// a collection is an eighth due"). TestIdleCollector checks the threshold.
// A collection while idle costs CPU only when the process has it to spare.
const idleDue = 8

// idleCollector runs collections while the process is idle (see above),
// checking every period until ctx ends.
func idleCollector(ctx context.Context, period time.Duration, log *slog.Logger) {
	samples := []metrics.Sample{
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	t := time.NewTicker(period)
	defer t.Stop()
	last, ok := cputime.Process()
	if !ok {
		log.Debug("no idle collections: the process's CPU time cannot be read here")
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, ok := cputime.Process()
		used := now - last
		last = now
		if !ok || used < 0 || float64(used) > idleShare*float64(period) {
			continue
		}
		metrics.Read(samples)
		goal, live, heap := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
		if goal <= live || heap < live+(goal-live)/idleDue {
			continue
		}
		began := time.Now()
		runtime.GC()
		log.Debug("collected while idle", "heap", heap, "live_before", live, "goal", goal, "took", time.Since(began))
		last, _ = cputime.Process() // the collection's own CPU is not load
	}
}
