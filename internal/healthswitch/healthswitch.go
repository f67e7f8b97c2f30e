// Package healthswitch serves a binary's /healthz and /readyz before the
// service behind them exists (while it waits for NATS: live, not ready)
// and hands both to the service's own handler once it is set. The worker
// and the orchestrator start their HTTP listener first so that a
// Kubernetes probe never finds the port closed while NATS is away. Probes
// is the pair of endpoints every one of them answers with.
package healthswitch

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Probes serves GET /healthz, 200 "ok" while live returns nil, and GET
// /readyz, 200 "ready" and then what report writes while ready returns
// nil; either answers 503 with the error otherwise, in plain text. A nil
// live is always live, a nil report writes nothing.
func Probes(live, ready func() error, report func(io.Writer)) http.Handler {
	mux := http.NewServeMux()
	probe := func(check func() error, ok string, report func(io.Writer)) http.HandlerFunc {
		return func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if check != nil {
				if err := check(); err != nil {
					rw.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprintln(rw, err)
					return
				}
			}
			fmt.Fprintln(rw, ok)
			if report != nil {
				report(rw)
			}
		}
	}
	mux.HandleFunc("GET /healthz", probe(live, "ok", nil))
	mux.HandleFunc("GET /readyz", probe(ready, "ready", report))
	return mux
}

// Switch is an http.Handler answering for a service not yet running.
type Switch struct {
	waiting http.Handler
	service atomic.Pointer[http.Handler]
}

// New returns a Switch whose /healthz answers 200 "ok" and whose /readyz
// answers 503 with waiting (e.g. "waiting for NATS at nats://host:4222")
// until Set.
func New(waiting string) *Switch {
	notYet := errors.New(waiting)
	return &Switch{waiting: Probes(nil, func() error { return notYet }, nil)}
}

// Set hands every request from now on to h, the running service's handler.
func (s *Switch) Set(h http.Handler) { s.service.Store(&h) }

// ServeHTTP serves r with the service's handler once set, else with the
// waiting endpoints (anything else is 404).
func (s *Switch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if h := s.service.Load(); h != nil {
		(*h).ServeHTTP(rw, r)
		return
	}
	s.waiting.ServeHTTP(rw, r)
}
