package streams

import (
	"fmt"
	"net/http"
)

// Ready returns nil when the worker consumes events and is connected to
// NATS, and an error wrapping ErrNotReady otherwise.
func (w *Worker) Ready() error {
	if !w.ready.Load() {
		return fmt.Errorf("%w: not consuming", ErrNotReady)
	}
	if !w.nc.IsConnected() {
		return fmt.Errorf("%w: NATS connection %s", ErrNotReady, w.nc.Status())
	}
	return nil
}

// HealthHandler serves /healthz (200 while the process runs) and /readyz
// (200 when Ready, 503 otherwise).
func (w *Worker) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
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
	})
	return mux
}
