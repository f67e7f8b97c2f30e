package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// sink keeps allocations from being optimized away.
var sink []byte

// TestIdleCollector runs the idle collector in this test process: right
// after a collection, idle, it collects nothing; once the heap has grown
// past 1/idleDue of the way to its goal, idle, it collects.
func TestIdleCollector(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const period = 20 * time.Millisecond
	runtime.GC()
	go idleCollector(ctx, period, slog.New(slog.NewTextHandler(io.Discard, nil)))

	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	before := numGC()
	time.Sleep(15 * period)
	if n := numGC() - before; n != 0 {
		t.Fatalf("%d collections with the heap just collected", n)
	}

	// Garbage until the heap is past 1/idleDue of the way from the live
	// heap to the goal, by a margin.
	samples := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	grown := false
	for range 1 << 20 {
		sink = make([]byte, 4096)
		metrics.Read(samples)
		goal, live, heap := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
		if heap >= live+(goal-live)*3/(2*idleDue) {
			grown = true
			break
		}
	}
	if !grown {
		t.Fatal("the heap did not grow past its share of the way to its goal")
	}
	before = numGC()
	deadline := time.Now().Add(5 * time.Second)
	for numGC() == before {
		if time.Now().After(deadline) {
			t.Fatal("no collection while idle with a collection due enough")
		}
		time.Sleep(period)
	}
}
