package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/ui"
)

// websocketOrigins returns the origins allowed to open the embedded
// server's WebSocket listener: --websocket-origins when given ("*" for
// any), else the origin of the --http server (with both loopback names
// when it listens on loopback), else any.
func websocketOrigins(o *options) []string {
	if len(o.websocketOrigins) > 0 {
		for _, v := range o.websocketOrigins {
			if v == "*" {
				return nil
			}
		}
		return o.websocketOrigins
	}
	host, port, err := net.SplitHostPort(o.httpAddr)
	if err != nil || port == "0" {
		return nil
	}
	hosts := []string{host}
	if isLoopback(host) || host == "" {
		hosts = []string{"127.0.0.1", "localhost", "::1"}
	}
	var out []string
	for _, h := range hosts {
		out = append(out, "http://"+net.JoinHostPort(h, port))
	}
	return out
}

// httpHandler serves the health endpoints and the viewer at /ui/, whose
// connection takes the worker's inbox prefix (its tenant's).
func httpHandler(health http.Handler, subjects streams.Subjects, inboxPrefix string, ns *server.Server) http.Handler {
	cfg := ui.Config{Prefix: subjects.Prefix(), Bucket: subjects.SnapshotBucket(), InboxPrefix: inboxPrefix}
	if ns != nil {
		if u, err := url.Parse(ns.WebsocketURL()); err == nil {
			cfg.WebSocketPort, _ = strconv.Atoi(u.Port())
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui.Handler(cfg)))
	mux.HandleFunc("GET /{$}", serveIndex)
	mux.Handle("/", health)
	return mux
}

// index is what GET / answers: the worker's endpoints, linked.
const index = `<!doctype html>
<meta charset="utf-8"><title>convstream worker</title>
<h1>convstream worker</h1>
<ul>
<li><a href="ui/">/ui/</a>: the live conversation viewer (<code>/ui/?c=CONVERSATION</code>)
<li><a href="healthz">/healthz</a>: liveness
<li><a href="readyz">/readyz</a>: readiness
<li><a href="metrics">/metrics</a>: Prometheus metrics (<code>--metrics</code>)
</ul>
`

// serveIndex serves index, so that a browser pointed at the worker's
// --http address finds the viewer rather than a 404 (TestIndex).
func serveIndex(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(rw, index)
}
