package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// faultFlow sends events to conversations in turn, each retried with its
// id until stored, and keeps what each conversation should be.
type faultFlow struct {
	c     *client.Client
	convs []string

	mu      sync.Mutex
	live    map[string]*conversation.Conversation
	lastSeq map[string]uint64 // the last event that changed each conversation
	next    map[string]int    // the index of each conversation's next event
	sent    int
	err     error
}

func newFaultFlow(c *client.Client, n int) *faultFlow {
	f := &faultFlow{c: c, live: map[string]*conversation.Conversation{}, lastSeq: map[string]uint64{}, next: map[string]int{}}
	for i := range n {
		conv := fmt.Sprintf("fault-%03d", i)
		f.convs = append(f.convs, conv)
		f.live[conv] = conversation.NewConversation()
	}
	return f
}

// faultEvent returns event k of a conversation: appends making a chain
// that branches every seventh message, an update of an earlier message
// every fifth event and a delete of the last message appended every
// eleventh.
func faultEvent(k int) (typ, msgID string, data map[string]any) {
	appends := func(j int) bool { return j%11 != 10 && j%5 != 4 }
	switch {
	case k%11 == 10:
		j := k - 1
		for !appends(j) {
			j--
		}
		id := fmt.Sprintf("m%d", j)
		return streams.TypeMessageDeleted, id, map[string]any{"id": id}
	case k%5 == 4:
		id := fmt.Sprintf("m%d", k-3)
		return streams.TypeMessageUpdated, id, map[string]any{"id": id, "content": fmt.Sprintf("edit %d", k)}
	}
	parent := any(nil)
	if k > 0 {
		parent = fmt.Sprintf("m%d", k-1)
		if k%7 == 0 && k >= 3 {
			parent = fmt.Sprintf("m%d", k-3)
		}
	}
	role := []string{"user", "assistant"}[k%2]
	id := fmt.Sprintf("m%d", k)
	return streams.TypeMessageAppended, id, map[string]any{"id": id, "role": role, "parentId": parent,
		"content": fmt.Sprintf("%s says %d", role, k), "createdAt": 1000 + k}
}

// send sends the next event of conv, retrying with its id until the
// stream stores it (a node gone or its leaders moving), and applies it to
// what conv should be when it applies (an event whose message is gone is
// refused by the worker and changes nothing, as it changes nothing here).
func (f *faultFlow) send(conv string) error {
	f.mu.Lock()
	k := f.next[conv]
	f.mu.Unlock()
	typ, msgID, data := faultEvent(k)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		sent, err := f.c.Send(ctx, conv, typ, data, client.WithEventID(fmt.Sprintf("%s-e%d", conv, k)))
		cancel()
		if err == nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			live := f.live[conv]
			var applies error
			switch typ {
			case streams.TypeMessageAppended:
				m, err := conversation.NewMessage(data)
				if err != nil {
					return err
				}
				if err := live.Append(m); err != nil {
					return fmt.Errorf("%s event %d: %w", conv, k, err)
				}
			case streams.TypeMessageUpdated:
				applies = live.Update(msgID, data)
			case streams.TypeMessageDeleted:
				applies = live.Delete(msgID)
			}
			if applies == nil {
				// The snapshot's version: the last event that changed the
				// conversation (one of a message deleted before is refused).
				f.lastSeq[conv] = sent.Sequence
			}
			f.next[conv] = k + 1
			f.sent++
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("send %s event %d: %w", conv, k, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run sends events to the conversations in turn, gap apart, until stop is
// closed.
func (f *faultFlow) run(stop <-chan struct{}, gap time.Duration) {
	for {
		for _, conv := range f.convs {
			select {
			case <-stop:
				return
			case <-time.After(gap):
			}
			if err := f.send(conv); err != nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				return
			}
		}
	}
}

// faultWindow is how long after a fault the events counted in its
// recovery time were sent: a round of the flow, so that every conversation,
// those of the partitions the fault stalled among them, has an event sent
// after the fault.
const faultWindow = 500 * time.Millisecond

// sequencesAt waits until at and returns sequences then.
func (f *faultFlow) sequencesAt(at time.Time) map[string]uint64 {
	time.Sleep(time.Until(at))
	return f.sequences()
}

// sequences returns each conversation's last event so far that changed
// it: its snapshot's version once applied.
func (f *faultFlow) sequences() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]uint64, len(f.lastSeq))
	for conv, seq := range f.lastSeq {
		out[conv] = seq
	}
	return out
}

// untilStored returns how long after since every conversation's stored
// snapshot reached its version in want, polling the bucket 8 reads at a
// time (each read bounded: a read sent to a frozen replica is asked again).
func untilStored(t testing.TB, c *client.Client, want map[string]uint64, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	pending := make(chan string, len(want))
	for conv := range want {
		pending <- conv
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[string]bool{}
	deadline := time.Now().Add(timeout)
	// What is left, each second, by partition (of clusterFaults' 6): the
	// log of a slow recovery says which owners it waited for.
	logged := make(chan struct{})
	defer close(logged)
	go func() {
		for {
			select {
			case <-logged:
				return
			case <-time.After(time.Second):
			}
			mu.Lock()
			parts := map[int]int{}
			for conv := range want {
				if !stored[conv] {
					parts[streams.PartitionOf(conv, 6)]++
				}
			}
			t.Logf("%v after the fault: %d conversations not stored yet, by partition %v", time.Since(since).Round(100*time.Millisecond), len(want)-len(stored), parts)
			mu.Unlock()
		}
	}()
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				var conv string
				select {
				case conv = <-pending:
				default:
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				s, err := c.Snapshot(ctx, conv)
				cancel()
				if err == nil && s.Version >= want[conv] {
					mu.Lock()
					stored[conv] = true
					mu.Unlock()
					continue
				}
				pending <- conv
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	took := time.Since(since)
	if left := len(want) - len(stored); left > 0 {
		t.Fatalf("%d of %d conversations not stored %v after the fault", left, len(want), timeout)
	}
	return took
}

// faultTimes are what clusterFaults measured: from a worker's kill, and
// from a server's freeze, to every event sent before it stored.
type faultTimes struct {
	kill, freeze time.Duration
	events       int
}

// clusterFaults runs 3 workers on a 3-node JetStream cluster of server
// processes (R3 stream and buckets, 6 partitions) with the default
// failover settings (pinned TTL, ack wait, pings) while events flow to 60
// conversations: it kills a worker (its connection cut, no graceful stop)
// and, once what the kill held is stored, freezes for frozen the server
// another worker is connected to (SIGSTOP: connections open and silent).
// Every conversation must then equal the Parse of its events.
func clusterFaults(t testing.TB, frozen time.Duration) faultTimes {
	procs := natstest.StartProcessCluster(t, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3, Partitions: 6}
	logger := natstest.FailureLogger(t, 400)
	dial := func(name string, first int) *nats.Conn {
		nc, err := streams.Connect(streams.ConnConfig{URL: natstest.ProcessURLs(procs, first), Name: name,
			Logger: logger.With("conn", name)}, nats.DontRandomize())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	conns := make([]*nats.Conn, 3)
	workers := make([]*Running, 3)
	for i := range 3 {
		conns[i] = dial(fmt.Sprintf("worker-%d", i), i)
		workers[i] = StartWorker(t, conns[i], WithLogger(logger.With("worker", i)), WithStorage(storage), WithLanes(4))
	}
	c := natstest.NewClient(t, dial("publisher", 0))
	f := newFaultFlow(c, 60)
	stop := make(chan struct{})
	flowing := make(chan struct{})
	go func() { defer close(flowing); f.run(stop, 5*time.Millisecond) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-flowing
	}()

	natstest.WaitFor(t, 60*time.Second, "partitions spread over the workers", func() bool {
		for _, r := range workers {
			if len(r.W.OwnedPartitions()) != 2 {
				return false
			}
		}
		return true
	})

	// Worker 0 dies: its connection is cut, nothing drained or acked.
	killed := time.Now()
	conns[0].Close()
	var times faultTimes
	times.kill = untilStored(t, c, f.sequencesAt(killed.Add(faultWindow)), killed, 90*time.Second)
	t.Logf("worker killed: every event sent up to %v after stored %v after it", faultWindow, times.kill.Round(time.Millisecond))

	// Worker 1's server freezes while events flow.
	frozenAt := time.Now()
	if err := procs[1].Freeze(); err != nil {
		t.Fatal(err)
	}
	times.freeze = untilStored(t, c, f.sequencesAt(frozenAt.Add(faultWindow)), frozenAt, 90*time.Second)
	t.Logf("server frozen: every event sent up to %v after stored %v after it", faultWindow, times.freeze.Round(time.Millisecond))
	time.Sleep(time.Until(frozenAt.Add(frozen)))
	if err := procs[1].Thaw(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // events flow on after the node's return
	close(stop)
	<-flowing
	if f.err != nil {
		t.Fatal(f.err)
	}
	last := f.sequences()
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range workers[1:] {
				t.Logf("worker %d owns %v", i+1, r.W.OwnedPartitions())
			}
			logPartitionConsumers(t, workers[2].W)
		}
	})
	natstest.CheckStoredAt(t, c, f.live, last, 2*time.Minute)
	times.events = f.sent
	t.Logf("%d events to %d conversations, every one equal to Parse", f.sent, len(f.convs))
	return times
}

// TestClusterFaults: a worker killed and a server frozen for 30 s while
// events flow to a 3-node cluster with partitions, and every conversation
// ends equal to Parse of its events (clusterFaults).
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s freeze of a server")
	}
	clusterFaults(t, 30*time.Second)
}

// BenchmarkClusterFaults measures what TestClusterFaults does: the time
// from a worker's kill to every event sent before it stored
// (kill-to-stored-s), and from a server's freeze (30 s) to the same
// (freeze-to-stored-s).
func BenchmarkClusterFaults(b *testing.B) {
	var kill, freeze time.Duration
	for range b.N {
		ft := clusterFaults(b, 30*time.Second)
		kill += ft.kill
		freeze += ft.freeze
	}
	b.ReportMetric(kill.Seconds()/float64(b.N), "kill-to-stored-s")
	b.ReportMetric(freeze.Seconds()/float64(b.N), "freeze-to-stored-s")
}
