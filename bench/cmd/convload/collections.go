package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A run's tail on a busy machine is decided mostly by whether one of the
// worker process's garbage collections marked during it (EXPERIMENTS.md).
// With --worker-pprof, convload asks the worker's pprof endpoint (its
// --pprof) when its recent collections ended and counts those in each run.
// The worker keeps the end times of its last 256 collections
// (runtime.MemStats.PauseEnd), which /debug/pprof/heap?debug=1 prints; a
// collection's last pause ends its mark, so one that began in a run and
// ended after it is not counted there. The clocks compared are the
// worker's and the generator's: the count means something only when both
// run on one machine.

// collectionEnds returns when the worker process behind the pprof endpoint
// at base (e.g. http://127.0.0.1:6060) ended its recent garbage
// collections, in no particular order.
func collectionEnds(ctx context.Context, base string) ([]time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := strings.TrimSuffix(base, "/") + "/debug/pprof/heap?debug=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("worker collections: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("worker collections: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("worker collections: %s: %s", url, resp.Status)
	}
	return parseCollectionEnds(resp.Body)
}

// errNoPauseEnd says a heap profile's text form lacked its PauseEnd line.
var errNoPauseEnd = errors.New("worker collections: no PauseEnd in the heap profile")

// parseCollectionEnds reads the "# PauseEnd = [t1 t2 ...]" line (Unix
// nanoseconds; 0 for slots not used yet) of a heap profile's text form.
func parseCollectionEnds(r io.Reader) ([]time.Time, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // 256 numbers of 19 digits, and long stack lines
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "# PauseEnd = [")
		if !ok {
			continue
		}
		rest, ok = strings.CutSuffix(rest, "]")
		if !ok {
			return nil, fmt.Errorf("worker collections: unterminated PauseEnd line")
		}
		var ends []time.Time
		for _, f := range strings.Fields(rest) {
			ns, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("worker collections: PauseEnd: %w", err)
			}
			if ns > 0 {
				ends = append(ends, time.Unix(0, ns))
			}
		}
		return ends, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("worker collections: %w", err)
	}
	return nil, errNoPauseEnd
}

// countWithin returns how many of ends fall in [from, to].
func countWithin(ends []time.Time, from, to time.Time) int {
	n := 0
	for _, t := range ends {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}
