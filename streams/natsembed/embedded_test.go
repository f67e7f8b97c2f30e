package natsembed

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestEmbeddedWebSocket starts the embedded server with a WebSocket
// listener on a free loopback port and connects to it over ws://.
func TestEmbeddedWebSocket(t *testing.T) {
	ns, err := Start(Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(), WebSocket: ":-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	u := ns.WebsocketURL()
	if !strings.HasPrefix(u, "ws://127.0.0.1:") || strings.HasSuffix(u, ":-1") || strings.HasSuffix(u, ":0") {
		t.Fatalf("WebsocketURL = %q, want ws://127.0.0.1:<port>", u)
	}
	nc, err := nats.Connect(u)
	if err != nil {
		t.Fatalf("connect over websocket: %v", err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Config{StoreDir: t.TempDir(), WebSocket: "nope"}); err == nil {
		t.Fatal("a bad websocket address was accepted")
	}
}

// TestLoopbackURL reaches an embedded server over TCP, on loopback when it
// listens on every interface.
func TestLoopbackURL(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:-1", "0.0.0.0:-1"} {
		ns, err := Start(Config{Listen: listen, StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		url, ok := LoopbackURL(ns)
		if u, opts := Connection(ns); u != url || len(opts) != 0 {
			t.Errorf("%s: EmbeddedConn = %q with %d options, want %q alone", listen, u, len(opts), url)
		}
		if !ok || !strings.HasPrefix(url, "nats://127.0.0.1:") {
			t.Errorf("%s: LoopbackURL = %q, %v", listen, url, ok)
		} else if nc, err := nats.Connect(url); err != nil {
			t.Errorf("%s: connect to %s: %v", listen, url, err)
		} else {
			nc.Close()
		}
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// TestEmbeddedConnInProcess connects in process to a server with no client
// listener, where LoopbackURL has no answer.
func TestEmbeddedConnInProcess(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	url, opts := Connection(ns)
	if url != "" || len(opts) != 1 {
		t.Fatalf("EmbeddedConn = %q with %d options, want in process", url, len(opts))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// TestEmbeddedListensOnLoopback: the embedded server binds loopback unless
// told otherwise, for an empty address and for an empty host.
func TestEmbeddedListensOnLoopback(t *testing.T) {
	host, port, err := splitHostPort("127.0.0.1:4222", "127.0.0.1")
	if err != nil || host != "127.0.0.1" || port != 4222 {
		t.Fatalf("default listen: %s %d %v", host, port, err)
	}
	ns, err := Start(Config{Listen: ":-1", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	addr := ns.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		t.Fatalf("listening on %v", addr)
	}
	t.Logf("Listen \":-1\" → %v", addr)
}

// TestStartupLogCondensed: at the info level, starting the server logs one
// line saying it is ready (with its version and URLs), not the server's
// banner; at the debug level the banner is there.
func TestStartupLogCondensed(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		ns, err := Start(Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))})
		if err != nil {
			t.Fatal(err)
		}
		ns.Shutdown()
		ns.WaitForShutdown()
		startup, _, _ := strings.Cut(buf.String(), "NATS server ready")
		lines := strings.Count(startup, "\n")
		if !strings.Contains(buf.String(), "NATS server ready") {
			t.Fatalf("%v: no ready line in\n%s", level, buf.String())
		}
		if level == slog.LevelInfo && lines > 0 {
			t.Errorf("%v: %d lines before the ready line:\n%s", level, lines, startup)
		}
		if level == slog.LevelDebug && lines < 5 {
			t.Errorf("%v: the banner (%d lines) is missing:\n%s", level, lines, startup)
		}
	}
}
