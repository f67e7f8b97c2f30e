package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/cputime"
)

// TestLoadRounds runs every phase twice against a worker, raw and worker
// alternately, and reports each round and the medians.
func TestLoadRounds(t *testing.T) {
	startWorker(t)
	code, out, errOut := convload(t, "--quiet", "--conversations", "5", "--events", "40", "--rounds", "2")
	if code != 0 {
		t.Fatalf("load: %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"raw JetStream (1)", "worker (1)", "raw JetStream (2)", "worker (2)",
		"worker peak / raw JetStream peak by round: ", "worker p99 at half of peak (", " ev/s) by round: ", "cpu busy gen cores\n",
		"raw JetStream p99 at that rate by round: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "worker (") + strings.Count(out, "raw JetStream ("); n != 8 {
		t.Errorf("%d runs, want 8 (raw and worker, flat out and at half, two rounds):\n%s", n, out)
	}

	// --half-rate: the second phase at a given rate, whatever the peak.
	code, out, errOut = convload(t, "--quiet", "--conversations", "5", "--events", "20", "--rounds", "2", "--raw=false", "--half-rate", "400")
	if code != 0 {
		t.Fatalf("load --half-rate: %d\n%s\n%s", code, out, errOut)
	}
	if n := len(regexp.MustCompile(`(?m)^worker \(\d\) +400 `).FindAllString(out, -1)); n != 2 ||
		!strings.Contains(out, "worker p99 at 400 ev/s (--half-rate) by round: ") || strings.Contains(out, "raw JetStream p99") {
		t.Errorf("want two runs at 400 ev/s, reported as such, and no raw runs:\n%s", out)
	}
	if code, _, _ = convload(t, "--quiet", "--conversations", "5", "--events", "20", "--half-rate", "-1"); code != 2 {
		t.Errorf("--half-rate -1: exit %d, want 2", code)
	}

	code, out, errOut = convload(t, "--quiet", "--json", "--conversations", "5", "--events", "20", "--rounds", "3", "--half=false")
	if code != 0 {
		t.Fatalf("load --json: %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Rounds          int       `json:"rounds"`
		PeakRatios      []float64 `json:"peakRatios"`
		MedianPeakRatio float64   `json:"medianPeakRatio"`
		Results         []struct {
			Name         string
			Round        int
			GeneratorCPU float64
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := cputime.Process(); ok {
		for _, r := range res.Results {
			if r.GeneratorCPU <= 0 {
				t.Errorf("%s (%d): no generator CPU", r.Name, r.Round)
			}
		}
	}
	if res.Rounds != 3 || len(res.PeakRatios) != 3 || res.MedianPeakRatio <= 0 || len(res.Results) != 6 || res.Results[5].Round != 3 {
		t.Errorf("JSON summary: %+v", res)
	}

	code, out, errOut = convload(t, "--quiet", "--conversations", "5", "--events", "40", "--rate", "400", "--raw=false", "--timeline", "20ms")
	if code != 0 {
		t.Fatalf("load --timeline: %d\n%s\n%s", code, out, errOut)
	}
	_, tl, _ := strings.Cut(out, "p99 (ms) of the events published in each 20ms of a run, and under it how busy the machine's CPUs were (%):\n")
	if fields := strings.Fields(strings.TrimPrefix(tl, "worker")); !strings.HasPrefix(tl, "worker ") || len(fields) < 2 {
		t.Errorf("no timeline of the worker run (40 events at 400 ev/s: about 5 windows of 20ms) in\n%s", out)
	}

	prof := filepath.Join(t.TempDir(), "load.pprof")
	code, out, errOut = convload(t, "--quiet", "--conversations", "5", "--events", "20", "--raw=false", "--half=false", "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("load --cpuprofile: %d\n%s\n%s", code, out, errOut)
	}
	// A profile is a gzipped protocol buffer.
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile wrote no profile: %v (%d bytes)", err, len(b))
	}
	if code, _, _ := convload(t, "--quiet", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")); code != 1 {
		t.Errorf("--cpuprofile into a missing directory: status %d, want 1", code)
	}

	if code, _, _ := convload(t, "--rounds", "0"); code != 2 {
		t.Errorf("--rounds 0: status %d, want 2", code)
	}
}

// TestLoadProcs checks that the generator runs on --procs Ps while it
// measures, says so, and gives the process its Ps back.
func TestLoadProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS set: it wins over --procs")
	}
	startWorker(t)
	before := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		procs string
		want  int
	}{{"1", 1}, {"3", 3}, {"0", before}} {
		code, out, errOut := convload(t, "--quiet", "--conversations", "2", "--events", "4", "--raw=false", "--half=false", "--procs", c.procs)
		if code != 0 {
			t.Fatalf("load --procs %s: %d\n%s\n%s", c.procs, code, out, errOut)
		}
		if want := fmt.Sprintf("(the load generator's GOMAXPROCS %d)", c.want); !strings.Contains(out, want) {
			t.Errorf("--procs %s: no %q in\n%s", c.procs, want, out)
		}
		if got := runtime.GOMAXPROCS(0); got != before {
			t.Fatalf("--procs %s: GOMAXPROCS %d after the run, was %d", c.procs, got, before)
		}
	}
	if code, _, _ := convload(t, "--procs", "-1"); code != 2 {
		t.Errorf("--procs -1: status %d, want 2", code)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
