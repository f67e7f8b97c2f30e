package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/convstream/convstream/streams"
)

// BenchmarkInferenceDoublingRefused is the request of issue 35 end to
// end: a worker started as main does (embedded server, built-in default
// pipeline) gets the depth-24 doubling request and answers it with
// pipeline.failed, code limit_exceeded. Issue 35 requires the refusal
// within 1 s with under 50 MiB of resident growth (before the limits: 2.2–2.4 GB
// and 5.9–9.2 s). Sub-benchmarks: with the default limits (the depth
// limit refuses it after 8 rounds) and with the depth raised to 30 by its
// flag (the expansion grows until the next round would pass 4 MiB).
// Reported: ns/op (the request's round trip), B/op (everything the process
// allocated, worker and embedded server, per request) and
// peak-RSS-growth-MiB (the process's peak resident set over the requests,
// less its resident set before them, from /proc/self/status after
// resetting the peak).
func BenchmarkInferenceDoublingRefused(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"default-limits", nil},
		{"depth-30", []string{"--inference-max-expansion-depth", "30"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rw := startRun(b, bc.args...)
			rw.conversation(b, "bomb", "{{v24}}")
			params := doublingParams(24)
			resetPeakRSS(b)
			before := procStatusKiB(b, "VmRSS")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if ev := rw.infer(b, "bomb", params); ev.Type() != streams.TypePipelineFailed {
					b.Fatalf("reply %s", ev.Type())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(procStatusKiB(b, "VmHWM")-before)/1024, "peak-RSS-growth-MiB")
		})
	}
}

// resetPeakRSS sets the process's peak resident set (VmHWM) to its
// current one (proc(5), /proc/PID/clear_refs).
func resetPeakRSS(tb testing.TB) {
	tb.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak resident set: %v", err)
	}
}

// procStatusKiB reads a field of /proc/self/status in KiB.
func procStatusKiB(tb testing.TB, field string) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			tb.Fatalf("%s: %v", field, err)
		}
		return n
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}
