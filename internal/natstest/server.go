package natstest

import (
	"context"
	"fmt"
	"os"

	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ReadyWithin is how long StartServer waits for a server and Serve for
// what it runs to be ready: generous, since the machine running the tests
// may be loaded and a fresh cluster takes a while to elect its leaders.
const ReadyWithin = time.Minute

// StartServer starts a JetStream server on a free loopback port with its
// store in dir (a fresh temporary directory when empty) and the worker's
// embedded server's settings (its max payload of 8 MiB: snapshots of long
// conversations are megabytes), and shuts it down when t ends.
func StartServer(t testing.TB, dir string) *server.Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "convstream-embedded", Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: dir, MaxPayload: 8 << 20, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(ReadyWithin) {
		ns.Shutdown()
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// Connect connects to ns, reconnecting for as long as the test runs, and
// closes the connection when t ends. An asynchronous error (a message
// dropped by a slow subscription) is printed with the test's name and the
// subscription's subject, which nats.go's own line names neither; on
// stderr, as the callback may come after the test ended.
func Connect(t testing.TB, ns *server.Server) *nats.Conn {
	t.Helper()
	name := t.Name()
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			fmt.Fprintf(os.Stderr, "%s: NATS async error on %q: %v\n", name, subject, err)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// WaitFor polls cond until it holds, and fails t when it does not within
// timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Served is something Serve runs (a worker, an orchestrator) until its
// context ends.
type Served struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Serve runs run in a goroutine until t ends or Stop, and waits up to
// ReadyWithin until ready returns nil; a run that returns first fails t
// with its error.
func Serve(t testing.TB, run func(ctx context.Context) error, ready func() error) *Served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Served{cancel: cancel, done: make(chan struct{})}
	go func() { s.err = run(ctx); close(s.done) }()
	t.Cleanup(func() { cancel(); <-s.done })
	deadline := time.Now().Add(ReadyWithin)
	for err := ready(); err != nil; err = ready() {
		select {
		case <-s.done:
			t.Fatalf("stopped before it was ready: %v", s.err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until ready: %v", ReadyWithin, err)
		}
	}
	return s
}

// Cancel ends run's context without waiting for it.
func (s *Served) Cancel() { s.cancel() }

// Done is closed once run returned.
func (s *Served) Done() <-chan struct{} { return s.done }

// Err is what run returned; nil until Done is closed.
func (s *Served) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Stop ends run's context and waits up to 30 s for it to return, failing
// t when it returned an error or did not return.
func (s *Served) Stop(t testing.TB) {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
		if s.err != nil {
			t.Fatalf("run: %v", s.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop")
	}
}
