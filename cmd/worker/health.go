package main

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/convstream/convstream/streams"
)

// healthSwitch serves /healthz and /readyz before the worker exists (while
// it waits for NATS: live, not ready) and hands them to the worker's own
// handler once set.
type healthSwitch struct {
	waiting http.Handler
	worker  atomic.Pointer[http.Handler]
}

func newHealthSwitch(natsURL string) *healthSwitch {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(rw, "ok")
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(rw, "waiting for NATS at %s\n", streams.RedactURL(natsURL))
	})
	return &healthSwitch{waiting: mux}
}

// set hands the endpoints to h.
func (s *healthSwitch) set(h http.Handler) { s.worker.Store(&h) }

func (s *healthSwitch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if h := s.worker.Load(); h != nil {
		(*h).ServeHTTP(rw, r)
		return
	}
	s.waiting.ServeHTTP(rw, r)
}
