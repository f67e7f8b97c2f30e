// Command echoworker measures the floor under any worker on convstream's
// pipeline: it starts an embedded NATS server as the worker does and
// consumes the events stream as the worker does, but does nothing with an
// event except answer it with a delta of the length convload waits
// for, then acknowledge it. convload against it times JetStream and
// the pipeline's shape (consume, publish a delta, acknowledge) on the
// machine, without decoding, applying or storing anything. Its state is
// a count of events by conversation, so its deltas are right only for
// conversations it saw from their first event, as load's are.
//
//	go run ./echoworker &      # in bench/
//	go run ./cmd/convload --quiet --warmup --rounds 3
//
// EXPERIMENTS.md ("The floor under any worker") has what it measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // behind --pprof only
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// config is what a run takes from the command line.
type config struct {
	listen     string        // the embedded server's client address
	dataDir    string        // its store; empty: a temporary directory
	prefix     string        // the deployment's subject prefix
	deltaBytes int           // padding carried by every delta
	ackAfter   time.Duration // hold acks this long, as the worker's wait for stores
	decode     bool          // decode each event as the worker does first
	heapMiB    int           // live pointer-bearing heap held through the run
	gcPercent  int           // the collector's target, set by main; 0: GOGC or Go's default
	pprof      string        // net/http/pprof address; empty: off
}

func main() {
	var cfg config
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:4222", "client address of the embedded NATS server")
	flag.StringVar(&cfg.dataDir, "data-dir", "", "JetStream store (empty: a temporary directory, removed at exit)")
	flag.StringVar(&cfg.prefix, "subject-prefix", "convstream", "subject prefix of the deployment")
	flag.IntVar(&cfg.deltaBytes, "delta-bytes", 300, "padding carried by every delta (a worker's delta of a 256-byte message carries about 300 bytes)")
	flag.DurationVar(&cfg.ackAfter, "ack-after", 0, "hold each acknowledgement this long, as a worker holds them until a store (checked as later events come; 0: at once)")
	flag.BoolVar(&cfg.decode, "decode", false, "decode each event as the worker does (streams.DecodeEvent, the CloudEvents SDK) before answering it: what decoding adds to the floor")
	flag.IntVar(&cfg.heapMiB, "heap-mib", 0, "hold this many MiB of live objects with pointers through the run, as a worker holds its conversations: what such a heap costs the floor")
	flag.IntVar(&cfg.gcPercent, "gc-percent", 0, "the garbage collector's target, as the worker's --gc-percent (0: GOGC, or Go's default)")
	flag.StringVar(&cfg.pprof, "pprof", "", "serve net/http/pprof on this address")
	flag.Parse()
	if cfg.gcPercent > 0 {
		debug.SetGCPercent(cfg.gcPercent) // the process's, as the worker's flag sets it
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log, nil); err != nil {
		log.Error("echoworker", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, when set, gets the server's client URL
// once the consumer is in place.
func run(ctx context.Context, cfg config, log *slog.Logger, ready func(url string)) error {
	subjects, err := streams.NewSubjects(cfg.prefix)
	if err != nil {
		return err
	}
	if cfg.dataDir == "" {
		if cfg.dataDir, err = os.MkdirTemp("", "echoworker-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.dataDir)
	}
	held := liveHeap(cfg.heapMiB)
	defer runtime.KeepAlive(held)
	if cfg.pprof != "" {
		srv := &http.Server{Addr: cfg.pprof, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.ListenAndServe() }()
		defer srv.Close()
	}
	ns, err := natsembed.Start(natsembed.Config{Listen: cfg.listen, StoreDir: cfg.dataDir,
		Logger: log.With("component", "nats-server")})
	if err != nil {
		return err
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	url, extra := natsembed.Connection(ns) // as the worker connects
	nc, err := streams.Connect(streams.ConnConfig{URL: url, Name: "echoworker", Logger: log}, extra...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, _, err := worker.Provision(ctx, js, subjects, worker.Storage{}, log)
	if err != nil {
		return err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "echoworker", FilterSubject: subjects.AllEvents(),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1, MaxAckPending: 1 << 20,
	})
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	// The worker's window and expiry (streams/worker/worker.go).
	it, err := cons.Messages(jetstream.PullMaxMessages(1024), jetstream.PullExpiry(time.Second))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	go func() { <-ctx.Done(); it.Drain() }()
	log.Info("echoworker consuming", "url", ns.ClientURL(), "store", cfg.dataDir)
	if ready != nil {
		ready(ns.ClientURL())
	}
	e := echo{nc: nc, subjects: subjects, pad: strings.Repeat("x", cfg.deltaBytes), counts: map[string]int{},
		ackAfter: cfg.ackAfter, decode: cfg.decode, log: log}
	for {
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
			e.ackDue(time.Time{})
			return nc.FlushTimeout(5 * time.Second)
		}
		if err != nil {
			continue // missed heartbeats and the like: the iterator recovers
		}
		e.answer(m)
	}
}

// echo answers events; it runs on one goroutine.
type echo struct {
	nc       *nats.Conn
	subjects streams.Subjects
	pad      string
	counts   map[string]int // events seen by conversation
	ackAfter time.Duration
	held     []heldAck // oldest first
	decode   bool
	log      *slog.Logger
}

// heldAck is an acknowledgement held back (--ack-after).
type heldAck struct {
	reply string
	at    time.Time
}

// answer publishes m's delta and acknowledges m, or holds its ack.
func (e *echo) answer(m jetstream.Msg) {
	if e.decode {
		// The event is answered either way: the floor measures the cost.
		if _, err := streams.DecodeEvent(m.Headers(), m.Data()); err != nil {
			e.log.Warn("event not decoded", "subject", m.Subject(), "err", err)
		}
	}
	id := strings.TrimPrefix(m.Subject(), e.subjects.Events(""))
	e.counts[id]++
	// Event k of a conversation is answered with a flat list of k entries:
	// what convload reads of a delta (see bench/loadgen).
	delta := `{"conversationId":` + strconv.Quote(id) + `,"from":0,"length":` + strconv.Itoa(e.counts[id]) +
		`,"flatList":["` + e.pad + `"]}`
	_ = e.nc.Publish(e.subjects.Snapshots(id), []byte(delta))
	if e.ackAfter <= 0 {
		_ = m.Ack()
		return
	}
	now := time.Now()
	e.held = append(e.held, heldAck{reply: m.Reply(), at: now})
	e.ackDue(now.Add(-e.ackAfter))
}

// ackDue acknowledges the held events that came at or before t, or all of
// them when t is zero.
func (e *echo) ackDue(t time.Time) {
	n := 0
	for n < len(e.held) && (t.IsZero() || !e.held[n].at.After(t)) {
		_ = e.nc.Publish(e.held[n].reply, []byte("+ACK"))
		n++
	}
	e.held = e.held[n:]
}

// heapNode is one 64-byte object of liveHeap: every word a pointer, so
// the collector scans all of it, as it scans a conversation's messages.
type heapNode struct {
	next *heapNode
	more [7]*heapNode // the node before too: words the collector follows
}

// liveHeap returns a list of mib MiB of heapNodes, each pointing at the
// one before.
func liveHeap(mib int) *heapNode {
	var head *heapNode
	for range mib << 20 / 64 {
		n := &heapNode{next: head}
		for i := range n.more {
			n.more[i] = head
		}
		head = n
	}
	return head
}
