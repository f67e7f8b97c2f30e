package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"regexp"
	"runtime"
	"runtime/debug"
	rpprof "runtime/pprof"
	"strings"
	"testing"
	"time"
)

// TestCollectionEnds reads this process's own heap profile: the collection
// forced between two instants must be counted between them.
func TestCollectionEnds(t *testing.T) {
	before := time.Now()
	runtime.GC()
	after := time.Now()
	var buf bytes.Buffer
	if err := rpprof.Lookup("heap").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	ends, err := parseCollectionEnds(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n := countWithin(ends, before, after); n < 1 {
		t.Errorf("%d collections between %v and %v, want at least the forced one (ends: %v)", n, before, after, ends)
	}
	if n := countWithin(ends, after.Add(time.Hour), after.Add(2*time.Hour)); n != 0 {
		t.Errorf("%d collections in the future", n)
	}

	for _, bad := range []string{
		"heap profile: 0: 0 [0: 0] @ heap/1048576\n# NumGC = 3\n",
		"# PauseEnd = [1 2 x]\n",
		"# PauseEnd = [1 2 3\n",
	} {
		if _, err := parseCollectionEnds(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := parseCollectionEnds(strings.NewReader("")); !errors.Is(err, errNoPauseEnd) {
		t.Errorf("empty profile: %v, want errNoPauseEnd", err)
	}
	ends, err = parseCollectionEnds(strings.NewReader("# PauseEnd = [0 0 1700000000000000000 0]\n"))
	if err != nil || len(ends) != 1 || !ends[0].Equal(time.Unix(0, 1700000000000000000)) {
		t.Errorf("slots not used yet: %v, %v", ends, err)
	}
}

// TestLoadWorkerCollections runs convload with --worker-pprof against
// the pprof handler of this process, which runs the worker, collecting
// after nearly every allocation: every run is counted, and the half-peak
// rounds are summed up. An endpoint that does not answer leaves the counts
// out, with a warning, and the load still succeeds.
func TestLoadWorkerCollections(t *testing.T) {
	startWorker(t)
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer debug.SetGCPercent(debug.SetGCPercent(1))

	code, out, errOut := convload(t, "--quiet", "--conversations", "5", "--events", "40", "--rounds", "2", "--worker-pprof", srv.URL)
	if code != 0 {
		t.Fatalf("load: %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, " worker gcs\n") {
		t.Errorf("no worker gcs column:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^(raw JetStream|worker) \(\d\) .* (\d+)$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 8 {
		t.Errorf("%d runs with a count, want 8:\n%s", len(rows), out)
	}
	counted := 0
	for _, r := range rows {
		if r[2] != "0" {
			counted++
		}
	}
	if counted == 0 {
		t.Errorf("no collection counted in any run at GOGC=1:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^worker process collections in those runs by round: \d+, \d+$`).MatchString(out) {
		t.Errorf("no summary of the half-peak rounds' collections:\n%s", out)
	}

	srv.Close()
	code, out, errOut = convload(t, "--quiet", "--conversations", "5", "--events", "20", "--half=false", "--worker-pprof", srv.URL)
	if code != 0 || strings.Contains(out, "worker gcs") || !strings.Contains(errOut, "--worker-pprof") {
		t.Errorf("endpoint gone: exit %d, want 0, no column and a warning\n%s\n%s", code, out, errOut)
	}
}
