package natsembed

import (
	"net"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Connection returns how a client in the process of an embedded server
// connects to it: over loopback TCP at url when it can (see LoopbackURL),
// otherwise in process, with an empty url and the option that says so.
func Connection(ns *server.Server) (url string, opts []nats.Option) {
	if url, ok := LoopbackURL(ns); ok {
		return url, nil
	}
	return "", []nats.Option{nats.InProcessServer(ns)}
}

// LoopbackURL returns the URL by which a client on this machine reaches
// an embedded server over TCP, and false when it cannot: no client
// listener, or one that speaks TLS (a client would need its certificates).
// A listener on every interface is reached on 127.0.0.1.
//
// The worker connects to its embedded server this way rather than in
// process: the in-process connection is a synchronous pipe, where every
// write waits for the other side to read it, and the socket's buffers
// let the worker and the server each run ahead. Driven flat out, the
// worker kept up with 64 to 73% of raw JetStream over TCP against 50 to
// 55% in process (BENCHMARKS.md).
func LoopbackURL(ns *server.Server) (string, bool) {
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok || strings.HasPrefix(ns.ClientURL(), "tls:") {
		return "", false
	}
	ip := addr.IP
	if ip == nil || ip.IsUnspecified() {
		// Go listens on every interface dual-stack ([::]), which takes
		// IPv4 connections too.
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "nats://" + net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port)), true
}
