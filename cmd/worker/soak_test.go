//go:build soak

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// soakEvent is one planned event.
type soakEvent struct {
	conv, typ string
	data      map[string]any
}

// planSoak plans perConv events for each of convs conversations (appends
// under a random earlier message, content edits, deletes), interleaved at
// random across conversations, and the conversations they must produce.
func planSoak(t *testing.T, convs, perConv int, rng *rand.Rand) ([]soakEvent, map[string]*conversation.Conversation) {
	t.Helper()
	want := map[string]*conversation.Conversation{}
	per := make([][]soakEvent, convs)
	for i := range convs {
		conv := fmt.Sprintf("soak%03d", i)
		live := conversation.NewConversation()
		var ids []string
		for k := range perConv {
			var ev soakEvent
			switch r := rng.IntN(20); {
			case len(ids) > 2 && r == 0:
				j := rng.IntN(len(ids))
				ev = soakEvent{conv, streams.TypeMessageDeleted, map[string]any{"id": ids[j]}}
				ids = append(ids[:j], ids[j+1:]...)
			case len(ids) > 0 && r <= 2:
				ev = soakEvent{conv, streams.TypeMessageUpdated, map[string]any{"id": ids[rng.IntN(len(ids))], "content": fmt.Sprintf("edit %d", k)}}
			default:
				id := fmt.Sprintf("m%d", k)
				data := map[string]any{"id": id, "role": []string{"user", "assistant"}[k%2], "content": fmt.Sprintf("%s says %d", conv, k)}
				if len(ids) > 0 {
					data["parentId"] = ids[len(ids)-1-rng.IntN(min(3, len(ids)))]
				}
				ev = soakEvent{conv, streams.TypeMessageAppended, data}
				ids = append(ids, id)
			}
			// The local model gets its own copy of the data.
			var copied map[string]any
			raw, _ := json.Marshal(ev.data)
			_ = json.Unmarshal(raw, &copied)
			var err error
			switch ev.typ {
			case streams.TypeMessageAppended:
				var m *conversation.Message
				if m, err = conversation.NewMessage(copied); err == nil {
					err = live.Append(m)
				}
			case streams.TypeMessageUpdated:
				err = live.Update(copied["id"].(string), copied)
			case streams.TypeMessageDeleted:
				err = live.Delete(copied["id"].(string))
			}
			if err != nil {
				t.Fatalf("plan %s event %d: %v", conv, k, err)
			}
			per[i] = append(per[i], ev)
		}
		want[conv] = live
	}
	var out []soakEvent
	for len(per) > 0 {
		i := rng.IntN(len(per))
		out = append(out, per[i][0])
		if per[i] = per[i][1:]; len(per[i]) == 0 {
			per = append(per[:i], per[i+1:]...)
		}
	}
	return out, want
}

// TestCrashLoopSoak builds cmd/worker and runs it as a process against a
// NATS server started by the test, publishes SOAK_EVENTS (100,000) events
// over SOAK_CONVERSATIONS (500) conversations, and kills the worker with
// SIGKILL SOAK_KILLS (20) times at random moments while it works, starting
// a new one each time. After the last start every conversation must equal
// Parse of its messages (the local model of the same events): nothing lost,
// nothing applied twice; the stream holds every event once and nothing was
// rejected. Run with make soak.
func TestCrashLoopSoak(t *testing.T) {
	events, convs, kills := envInt("SOAK_EVENTS", 100_000), envInt("SOAK_CONVERSATIONS", 500), envInt("SOAK_KILLS", 20)
	seed := uint64(envInt("SOAK_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 7))
	plan, want := planSoak(t, convs, events/convs, rng)
	t.Logf("seed %d: %d events over %d conversations, %d kills", seed, len(plan), convs, kills)

	bin := filepath.Join(t.TempDir(), "worker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ns, err := natsembed.Start(natsembed.Config{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var rejected atomic.Int64
	if _, err := nc.Subscribe("convstream.errors.>", func(m *nats.Msg) {
		rejected.Add(1)
		t.Logf("rejection: %s", m.Data)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // counting from the first event
		t.Fatal(err)
	}

	logDir := t.TempDir()
	round := 0
	start := func() *exec.Cmd {
		round++
		logf, err := os.Create(filepath.Join(logDir, fmt.Sprintf("worker-%02d.log", round)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--nats-url", ns.ClientURL(), "--http", "off", "--ack-wait", "2s", "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}

	// Publish everything as fast as JetStream takes it, in order, with
	// backpressure (see soakPublisher).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*soakWindow),
		jetstream.WithPublishAsyncTimeout(soakAckWait))
	if err != nil {
		t.Fatal(err)
	}
	// The first worker provisions the stream; publishing starts once it exists.
	cmd := start()
	for {
		if _, err := js.Stream(context.Background(), "CONVSTREAM_EVENTS"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	began := time.Now()
	type published struct {
		took    time.Duration
		lastSeq map[string]uint64
		err     error
	}
	pubDone := make(chan published, 1)
	go func() {
		p := &soakPublisher{js: js, lastSeq: make(map[string]uint64, convs)}
		err := p.publishAll(plan)
		// Always answered, so that a failed publish ends the test at once
		// rather than leaving it waiting for its timeout.
		pubDone <- published{took: time.Since(began), lastSeq: p.lastSeq, err: err}
	}()

	for k := range kills {
		if k > 0 {
			cmd = start()
		}
		time.Sleep(time.Duration(300+rng.IntN(2700)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		t.Logf("kill %d at %v", k+1, time.Since(began).Round(time.Millisecond))
	}
	if kills > 0 {
		cmd = start()
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		stopped := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		_ = cmd.Wait()
		stopped.Stop()
	}()
	pub := <-pubDone
	if pub.err != nil {
		t.Fatalf("publishing: %v", pub.err)
	}
	lastSeq := pub.lastSeq
	t.Logf("published %d events in %v (%.0f/s)", len(plan), pub.took.Round(time.Millisecond), float64(len(plan))/pub.took.Seconds())

	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Fail with what is missing a minute before the test's own timeout,
	// rather than be killed by it.
	deadline := time.Now().Add(30 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	for conv := range want {
		for {
			s, err := c.Snapshot(ctx, conv)
			if err == nil && s.Sequence >= lastSeq[conv] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not converge: %v %v", conv, s, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	took := time.Since(began)
	bad := 0
	for conv, live := range want {
		s, err := c.Snapshot(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		var gotFlat, gotTree, wantFlat, wantTree any
		_ = json.Unmarshal(s.FlatList, &gotFlat)
		_ = json.Unmarshal(s.ContextTree, &gotTree)
		raw, _ := json.Marshal(res.FlatList)
		_ = json.Unmarshal(raw, &wantFlat)
		raw, _ = json.Marshal(res.ContextTree)
		_ = json.Unmarshal(raw, &wantTree)
		if d := jsondiff.Diff(wantFlat, gotFlat) + jsondiff.Diff(wantTree, gotTree); d != "" {
			bad++
			if bad <= 5 {
				t.Errorf("%s: %s", conv, d)
			}
		}
	}
	stream, err := js.Stream(ctx, "CONVSTREAM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every event stored once: compaction purges applied ones, so the
	// stream's last sequence counts them.
	if info.State.LastSeq != uint64(len(plan)) {
		t.Errorf("stream stored %d events, want %d", info.State.LastSeq, len(plan))
	}
	if n := rejected.Load(); n != 0 {
		t.Errorf("%d events rejected", n)
	}
	t.Logf("%d kills; converged %v after the first publish (%.0f events/s end to end); %d/%d conversations equal Parse, stream holds %d of its %d events",
		kills, took.Round(time.Millisecond), float64(len(plan))/took.Seconds(), len(want)-bad, len(want), info.State.Msgs, info.State.LastSeq)
}

// soakWindow bounds the events published and not yet acknowledged by
// JetStream; soakAckWait is how long one acknowledgement may take before
// the event is published again (the same Nats-Msg-Id: JetStream stores it
// once). Without a bound the publisher ran ahead of a server slowed by a
// loaded machine until PublishMsgAsync failed with "stalled with too many
// outstanding async published messages", after which the test waited for
// its 60-minute timeout (issue 35, SOAK_SEED=475438211).
const (
	soakWindow    = 512
	soakAckWait   = 10 * time.Second
	soakTries     = 6 // of one publish, a stall or a lost acknowledgement each
	soakStallWait = 5 * time.Second
)

// soakPublisher publishes the soak's events in plan order with at most
// soakWindow awaiting their acknowledgement, and records the last stream
// sequence of each conversation.
type soakPublisher struct {
	js       jetstream.JetStream
	lastSeq  map[string]uint64
	inflight []soakInflight
}

type soakInflight struct {
	i   int
	e   soakEvent
	msg *nats.Msg
	f   jetstream.PubAckFuture
}

func (p *soakPublisher) publishAll(plan []soakEvent) error {
	for i, e := range plan {
		m, err := soakMessage(i, e)
		if err != nil {
			return err
		}
		for len(p.inflight) >= soakWindow {
			if err := p.settleOldest(); err != nil {
				return err
			}
		}
		f, err := p.publishAsync(i, m)
		if err != nil {
			return err
		}
		p.inflight = append(p.inflight, soakInflight{i: i, e: e, msg: m, f: f})
	}
	for len(p.inflight) > 0 {
		if err := p.settleOldest(); err != nil {
			return err
		}
	}
	return nil
}

// publishAsync publishes m, and when the client's own buffer of
// unacknowledged publishes is full (a stall), waits for it to drain and
// tries again, soakTries times.
func (p *soakPublisher) publishAsync(i int, m *nats.Msg) (jetstream.PubAckFuture, error) {
	for try := 1; ; try++ {
		f, err := p.js.PublishMsgAsync(m)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) || try == soakTries {
			return nil, fmt.Errorf("publish event %d (try %d): %w", i, try, err)
		}
		select {
		case <-p.js.PublishAsyncComplete():
		case <-time.After(soakStallWait):
		}
	}
}

// settleOldest waits for the acknowledgement of the oldest event in
// flight. One that fails or times out is published again, synchronously,
// with the same id: a duplicate means the first copy was stored, in its
// place. A copy stored only on the retry came after later events of its
// conversation, which breaks the order the test checks, so it is an error.
func (p *soakPublisher) settleOldest() error {
	in := p.inflight[0]
	p.inflight = p.inflight[1:]
	var ack *jetstream.PubAck
	var err error
	select {
	case ack = <-in.f.Ok():
	case err = <-in.f.Err():
	case <-time.After(soakAckWait + time.Second):
		err = errors.New("no acknowledgement")
	}
	for try := 2; err != nil; try++ {
		if try > soakTries {
			return fmt.Errorf("publish event %d: %w", in.i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), soakAckWait)
		ack, err = p.js.PublishMsg(ctx, in.msg)
		cancel()
		if err == nil && !ack.Duplicate {
			return fmt.Errorf("event %d was stored only when published again (try %d), after later events of %s", in.i, try, in.e.conv)
		}
	}
	p.lastSeq[in.e.conv] = max(p.lastSeq[in.e.conv], ack.Sequence)
	return nil
}

// soakMessage is event i of the plan as a structured CloudEvent.
func soakMessage(i int, e soakEvent) (*nats.Msg, error) {
	ev := event.New()
	ev.SetID(fmt.Sprintf("soak-%d", i))
	ev.SetSource("urn:soak")
	ev.SetType(e.typ)
	ev.SetExtension(streams.ExtConversationID, e.conv)
	if err := ev.SetData(streams.ContentTypeJSON, e.data); err != nil {
		return nil, err
	}
	return streams.EncodeEvent("convstream.events."+e.conv, &ev, streams.Structured)
}
