package loadgen

import (
	"slices"
	"time"
)

// Window is the latency of the events published in one stretch of a run:
// a run's p99 says how bad its tail is, a timeline says whether the tail
// is spread over the run (the load) or bunched in a few windows (a pause:
// a garbage-collector mark, a burst of snapshot writes).
type Window struct {
	Start         time.Duration // since publishing began
	Events        int           // events published in the window that came back
	P50, P99, Max time.Duration
	// CPUBusy is the share of the machine's CPU time that was busy in the
	// window (by the clock, which is the publishing time while the
	// generator keeps up), as Result.CPUBusy.
	CPUBusy float64 `json:",omitempty"`
}

// timeline buckets the events from skip on by when they were published,
// every width, and returns each bucket's latencies; events that did not
// come back (recv 0) are left out, empty buckets too.
func timeline(start time.Time, width time.Duration, sent []int64, recv []int64, skip int) []Window {
	if width <= 0 {
		return nil
	}
	var buckets [][]time.Duration
	for i := skip; i < len(sent); i++ {
		if recv[i] == 0 || sent[i] == 0 {
			continue
		}
		b := max(0, int((sent[i]-start.UnixNano())/int64(width)))
		for len(buckets) <= b {
			buckets = append(buckets, nil)
		}
		buckets[b] = append(buckets[b], time.Duration(recv[i]-sent[i]))
	}
	var out []Window
	for b, lat := range buckets {
		if len(lat) == 0 {
			continue
		}
		slices.Sort(lat)
		out = append(out, Window{Start: time.Duration(b) * width, Events: len(lat),
			P50: quantile(lat, 0.50), P99: quantile(lat, 0.99), Max: lat[len(lat)-1]})
	}
	return out
}

// quantile returns the q quantile of sorted, non-empty lat.
func quantile(lat []time.Duration, q float64) time.Duration {
	return lat[min(len(lat)-1, int(q*float64(len(lat))))]
}
