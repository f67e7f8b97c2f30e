package worker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// lockedBuffer is a bytes.Buffer safe for the handlers of several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Split(bytes.TrimSpace(l.b.Bytes()), []byte("\n"))
}

// TestPartitionsObserved: a worker on 2 partitions reports owning both
// (convstream.partitions.owned), counts their acquisition
// (convstream.partitions.changes), and every line it logs names it
// (worker_id, the id it has in the members bucket).
func TestPartitionsObserved(t *testing.T) {
	ns := startServer(t, "")
	nc := connect(t, ns)
	reader := sdkmetric.NewManualReader()
	var logs lockedBuffer
	r := startWorker(t, nc, WithStorage(Storage{Partitions: 2}), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := newClient(t, nc)
	send, _ := chainedSender(t, c)
	sendRounds(send, "observed", 20, 0, 1)
	waitFor(t, 30*time.Second, "both partitions acquired", func() bool {
		return sumWhere(collect(t, reader), MetricPartitionsChanges, "change", "acquired") == 2
	})
	rm := collect(t, reader)
	owned := int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == MetricPartitionsOwned && len(g.DataPoints) == 1 {
				owned = g.DataPoints[0].Value
			}
		}
	}
	if owned != 2 {
		t.Errorf("%s: %d, want 2", MetricPartitionsOwned, owned)
	}
	r.stop(t)
	lines := logs.lines()
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec["worker_id"] != r.w.id || r.w.id == "" {
			t.Errorf("log line without the worker's id %q: %s", r.w.id, line)
		}
	}
	if len(lines) < 3 {
		t.Errorf("%d log lines; want the start, the partitions acquired, the stop", len(lines))
	}
}
