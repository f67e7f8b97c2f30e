package worker

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/convstream/convstream/internal/healthswitch"
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
		return fmt.Errorf("worker: lane %d has run one task for %v", i, d.Round(time.Second))
	}
	return nil
}

// HealthHandler serves /healthz (200 while the process runs and Live, 503
// otherwise) and /readyz (200 when Ready, 503 otherwise).
func (w *Worker) HealthHandler() http.Handler {
	// Conversations held at a limit are a reason to look, not to stop
	// sending this worker work: it serves the others.
	return healthswitch.Probes(w.Live, w.Ready, func(rw io.Writer) {
		fmt.Fprint(rw, w.degradedReport())
		fmt.Fprint(rw, w.eventsLostReport())
		fmt.Fprint(rw, w.auditReport())
		fmt.Fprint(rw, w.newerFormReport())
	})
}
