package main

import (
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
	mux.Handle("/", health)
	return mux
}
