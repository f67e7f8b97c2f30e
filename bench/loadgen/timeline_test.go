package loadgen

import (
	"testing"
	"time"
)

// TestTimeline buckets events by publish time, leaves out what did not
// come back and the warmup, and measures each window.
func TestTimeline(t *testing.T) {
	start := time.Unix(100, 0)
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	ms := time.Millisecond
	sent := []int64{at(-5 * ms), at(0), at(50 * ms), at(99 * ms), at(120 * ms), at(350 * ms), at(360 * ms)}
	recv := []int64{at(0), at(2 * ms), at(51 * ms), at(140 * ms), at(121 * ms), 0, at(370 * ms)}
	got := timeline(start, 100*ms, sent, recv, 1)
	want := []Window{
		{Start: 0, Events: 3, P50: 2 * ms, P99: 41 * ms, Max: 41 * ms},
		{Start: 100 * ms, Events: 1, P50: ms, P99: ms, Max: ms},
		{Start: 300 * ms, Events: 1, P50: 10 * ms, P99: 10 * ms, Max: 10 * ms},
	}
	if len(got) != len(want) {
		t.Fatalf("timeline %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("window %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if timeline(start, 0, sent, recv, 0) != nil {
		t.Error("a timeline without a window width")
	}
}
