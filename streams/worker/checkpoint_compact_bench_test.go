package worker

import (
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/convstream/convstream/internal/natstest"
)

// BenchmarkCompaction edits 1,000 conversations of 10 messages 1,000
// times each (1,010,000 events, round robin in rounds of 50 edits a
// conversation) through one worker whose cache holds them all, with
// compaction on (busy conversations compacted at DefaultCompactRatio, and
// by the rebuild bound alone: ratio 0) and off, and reports the events
// stream's bytes against what the conversations hold: once the last edit
// is stored (busy conversations) and after a graceful stop (which
// checkpoints what changed since).
// CPU is the process's (worker, embedded server and publisher): the
// difference between on and off is what compaction costs. -short runs
// 100 conversations of 200 edits.
//
//	go test ./streams/worker -run '^$' -bench BenchmarkCompaction -benchtime 1x -timeout 40m
func BenchmarkCompaction(b *testing.B) {
	load := editLoad{convs: 1000, msgs: 10, edits: 1000, size: 100}
	if testing.Short() {
		load.convs, load.edits = 100, 200
	}
	for _, run := range []struct {
		on    bool
		ratio float64
	}{{true, DefaultCompactRatio}, {true, 0}, {false, 0}} {
		name := fmt.Sprintf("compaction=%v", run.on)
		if run.on {
			name += fmt.Sprintf("/ratio=%v", run.ratio)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				compactionRun(b, load, run.on, run.ratio)
			}
		})
	}
}

// compactionRun runs load once through a worker with compaction on or
// off, busy conversations compacted at ratio (WithCompactRatio; 0: by the
// rebuild bound alone), and reports its figures.
func compactionRun(b *testing.B, load editLoad, on bool, ratio float64) {
	b.StopTimer()
	ns := natstest.StartServer(b, "")
	nc := natstest.Connect(b, ns)
	c := natstest.NewClient(b, nc)
	reader := sdkmetric.NewManualReader()
	r := StartWorker(b, nc, WithEventCompaction(on), WithCompactRatio(ratio), WithLogger(natstest.FailureLogger(b, 20)),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	want := load.want(b, load.edits)
	state := heldBytes(b, want)
	cpu0, start := cpuTime(b), time.Now()
	b.StartTimer()
	last := load.publish(b, c, 0, load.edits)
	for conv, seq := range last {
		natstest.WaitVersion(b, c, conv, seq, 10*time.Minute)
	}
	b.StopTimer()
	cpu, elapsed := cpuTime(b)-cpu0, time.Since(start)
	busy, busyMsgs := eventsBytes(b, c)
	r.Stop(b)
	rest, restMsgs := eventsBytes(b, c)
	rm := natstest.Collect(b, reader)
	events := load.convs * (load.msgs + load.edits)
	b.ReportMetric(float64(busy)/float64(state), "busy-bytes/state")
	b.ReportMetric(float64(rest)/float64(state), "stopped-bytes/state")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
	b.Logf("compaction %v, ratio %v: %d conversations holding %d bytes; %d events in %v (%.0f ev/s), CPU %v; "+
		"events stream once applied %d bytes in %d events, after the stop %d bytes in %d events; "+
		"checkpoints written %d, stale %d; purges %d, failed %d",
		on, ratio, load.convs, state, events, elapsed.Round(time.Millisecond), float64(events)/elapsed.Seconds(), cpu.Round(time.Millisecond),
		busy, busyMsgs, rest, restMsgs,
		sumWhere(rm, MetricCheckpoints, "outcome", "written"), sumWhere(rm, MetricCheckpoints, "outcome", "stale"),
		sumWhere(rm, MetricCompactions, "outcome", "purged"), sumWhere(rm, MetricCompactions, "outcome", "failed"))
}
