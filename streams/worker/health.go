package worker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/convstream/convstream/streams"
)

// Ready returns nil when the worker consumes events, is connected to NATS
// and can store snapshots (see WithStoreStallLimit), and an error wrapping
// ErrNotReady otherwise.
func (w *Worker) Ready() error {
	if !w.ready.Load() {
		if p := w.waiting.Load(); p != nil {
			return fmt.Errorf("%w: not consuming: %w", streams.ErrNotReady, *p)
		}
		return fmt.Errorf("%w: not consuming", streams.ErrNotReady)
	}
	if !w.nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %s", streams.ErrNotReady, w.nc.Status())
	}
	return w.snapshots.check(time.Now())
}

// laneStallLimit is how long one task may hold a lane before the worker
// reports itself not live. The longest a task runs by design is a batch of
// snapshot writes, each bounded by storeTimeout; a lane held for minutes
// is wedged. Its partitions stay pinned to this worker (its pulls go on,
// see intake), so the liveness probe, restarting it, is what hands them
// to another.
const laneStallLimit = 2 * time.Minute

// Live returns nil unless a lane has been held by one task for longer
// than laneStallLimit.
func (w *Worker) Live() error {
	if !w.ready.Load() {
		return nil // not consuming: nothing to be stuck on
	}
	if i, d := w.lanes.stalled(laneStallLimit); i >= 0 {
		return fmt.Errorf("streams: lane %d has run one task for %v", i, d.Round(time.Second))
	}
	return nil
}

// HealthHandler serves /healthz (200 while the process runs and Live, 503
// otherwise) and /readyz (200 when Ready, 503 otherwise).
func (w *Worker) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := w.Live(); err != nil {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(rw, err)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := w.Ready(); err != nil {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(rw, err)
			return
		}
		fmt.Fprintln(rw, "ready")
		// Conversations held at a limit are a reason to look, not to stop
		// sending this worker work: it serves the others.
		fmt.Fprint(rw, w.degradedReport())
		fmt.Fprint(rw, w.eventsLostReport())
	})
	return mux
}
