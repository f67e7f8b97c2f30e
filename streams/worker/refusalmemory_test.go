package worker

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// refusalRig is a worker with conversations filled to their snapshot
// limit, and a count of the rejections reported for them.
type refusalRig struct {
	w       *Worker
	c       *client.Client
	convs   []*limitsConv
	refused atomic.Int64
	applied atomic.Int64
}

// newRefusalRig starts a worker whose snapshots may take limit bytes and
// fills n conversations with chained messages of 2 KB contents until one
// of each is refused snapshot_too_large.
func newRefusalRig(t testing.TB, n, limit int) *refusalRig {
	t.Helper()
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := &refusalRig{}
	run := StartWorker(t, nc, WithLogger(natstest.FailureLogger(t, 20)), WithSnapshotInterval(0),
		WithLimits(Limits{MaxEventBytes: DefaultMaxEventBytes, MaxMessages: DefaultMaxMessages, MaxSnapshotBytes: limit}))
	r.w, r.c = run.W, natstest.NewClient(t, nc)
	errs, err := nc.Subscribe(r.w.cfg.subjects.Errors("*"), func(*nats.Msg) { r.refused.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	deltas, err := nc.Subscribe(r.w.cfg.subjects.Snapshots("*"), func(*nats.Msg) { r.applied.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = errs.Unsubscribe(); _ = deltas.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("x", 2000)
	want := int64(0)
	last := map[string]uint64{}
	for i := range n {
		lc := &limitsConv{id: fmt.Sprintf("full%d", i)}
		r.convs = append(r.convs, lc)
		for k := 0; ; k++ {
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": "user", "content": content}
			if k > 0 {
				data["parentId"] = lc.kept[len(lc.kept)-1].ID()
			}
			fits := snapshotFits(t, lc, data, limit)
			sent := lc.send(t, r.c, data, fits)
			if !fits {
				want++
				break
			}
			last[lc.id] = sent.Sequence
		}
	}
	natstest.WaitFor(t, 60*time.Second, "every conversation at its limit", func() bool {
		if r.refused.Load() < want {
			return false
		}
		for id, seq := range last {
			if !storedAt(r.c, id, seq) {
				return false
			}
		}
		return true
	})
	return r
}

// snapshotFits reports whether the snapshot of lc with the message of
// data appended fits in limit bytes, as the worker counts it (its flatList
// entries with a comma each).
func snapshotFits(t testing.TB, lc *limitsConv, data map[string]any, limit int) bool {
	t.Helper()
	m, err := conversation.NewMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := conversation.Parse(append(lc.kept[:len(lc.kept):len(lc.kept)], m), nil)
	if err != nil {
		t.Fatal(err)
	}
	value, err := encodeSnapshot(lc.id, 1<<40, 1<<40, res)
	if err != nil {
		t.Fatal(err)
	}
	return len(value)+1 <= limit
}

// storedAt reports whether the stored snapshot of id covers seq.
func storedAt(c *client.Client, id string, seq uint64) bool {
	s, err := c.Snapshot(context.Background(), id)
	return err == nil && s.Version >= seq
}

// refuse sends each conversation an append of size bytes of content that
// takes it over its limit, rounds times, and waits until all are refused.
func (r *refusalRig) refuse(t testing.TB, rounds, size int) {
	t.Helper()
	content := strings.Repeat("y", size)
	want := r.refused.Load()
	for k := range rounds {
		for _, lc := range r.convs {
			data := map[string]any{"id": fmt.Sprintf("over%d-%d", k, time.Now().UnixNano()), "role": "user",
				"content": content, "parentId": lc.kept[len(lc.kept)-1].ID()}
			lc.send(t, r.c, data, false)
			want++
		}
	}
	natstest.WaitFor(t, 60*time.Second, "every append refused", func() bool { return r.refused.Load() >= want })
	// A refused event is reported before it is removed from the stream and
	// terminated.
	waitAcknowledged(t, r.w, 60*time.Second)
}

// heapSampler records the largest HeapInuse it sees while it runs.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak atomic.Uint64
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) end() uint64 { close(h.stop); h.done.Wait(); return h.peak.Load() }

// heapInuseAfterGC returns HeapInuse after a full collection.
func heapInuseAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestRefusalMemoryBounded: an event refused snapshot_too_large let its
// conversation go, and the next event rebuilt it from the stored snapshot
// and the events after it, a whole conversation's rebuild for every
// refusal: 2.8 MB allocated a refusal at a 256 KB limit. Now the refused
// event is taken back in place (handler_undo.go). Ten conversations at a 256 KB
// limit each refuse 20 KB appends thirty times: a refusal allocates at
// most twice the limit (the process's allocations, the server's
// included), the heap after a collection stays within refusalHeapBound of
// what it was at the limit, and while refusing within what the garbage
// collector's pacing (GOGC) lets that grow to. Every stored snapshot is
// still Parse of the events accepted.
func TestRefusalMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills conversations to their limit")
	}
	const convs, limit, rounds = 10, 256 << 10, 30
	r := newRefusalRig(t, convs, limit)
	base := heapInuseAfterGC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h := sampleHeap()
	r.refuse(t, rounds, 20<<10)
	peak := h.end()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	end := heapInuseAfterGC()
	bound := uint64(refusalHeapBound(convs, limit))
	perRefusal := (after.TotalAlloc - before.TotalAlloc) / (convs * rounds)
	t.Logf("heap in use %d KB at the limit, peak %d KB while refusing, %d KB after; %d KB and %d allocations a refusal (the process's, server included)",
		base>>10, peak>>10, end>>10, perRefusal>>10, (after.Mallocs-before.Mallocs)/(convs*rounds))
	if perRefusal > 2*limit {
		t.Errorf("%d KB allocated a refusal, over twice the limit of %d KB", perRefusal>>10, limit>>10)
	}
	if end > base+bound {
		t.Errorf("heap at %d KB after refusing, over %d KB at the limit plus the bound %d KB", end>>10, base>>10, bound>>10)
	}
	gogc := debug.SetGCPercent(100)
	debug.SetGCPercent(gogc)
	if gogc > 0 {
		if paced := (base + bound) * uint64(100+gogc) / 100; peak > paced {
			t.Errorf("heap peaked at %d KB while refusing, over the %d KB GOGC=%d lets %d KB grow to", peak>>10, paced>>10, gogc, (base+bound)>>10)
		}
	}
	for _, lc := range r.convs {
		snap, err := r.c.Snapshot(context.Background(), lc.id)
		if err != nil {
			t.Fatal(err)
		}
		res, err := conversation.Parse(lc.kept, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: stored snapshot differs from Parse of the events kept: %s", lc.id, d)
		}
	}
	if got := r.w.Degraded(); len(got) != convs {
		t.Errorf("%d conversations degraded, want %d", len(got), convs)
	}
}

// refusalHeapBound is what a stream of refusals may add to a worker's
// heap, live after a collection: four times the limit for each
// conversation refused (the state and what the refused events left in it,
// the flat list and tree measured, the refused event and its report), and
// 16 MB for the server, the client and their buffers.
func refusalHeapBound(convs, limit int) int { return 4*convs*limit + 16<<20 }

// BenchmarkRefusal is what an event costs the process (worker, client and
// embedded server) when it is refused snapshot_too_large, beside one
// accepted: a conversation filled to its snapshot limit with 2 KB
// messages refuses a 20 KB append (refused); a new conversation takes one
// (accepted). Each op waits for the rejection or the delta. Run with
// -benchtime=100x.
func BenchmarkRefusal(b *testing.B) {
	for _, limit := range []int{64 << 10, 256 << 10, 1 << 20} {
		r := newRefusalRig(b, 1, limit)
		b.Run(fmt.Sprintf("refused/limit=%dKB", limit>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.refuse(b, 1, 20<<10)
			}
		})
		b.Run(fmt.Sprintf("accepted/limit=%dKB", limit>>10), func(b *testing.B) {
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				want := r.applied.Load() + 1
				k++
				fresh := &limitsConv{id: fmt.Sprintf("fresh%d-%d", limit, k)}
				fresh.send(b, r.c, map[string]any{"id": "m0", "role": "user", "content": strings.Repeat("z", 20<<10)}, false)
				natstest.WaitFor(b, 30*time.Second, "the append applied", func() bool { return r.applied.Load() >= want })
			}
		})
	}
}

// TestRefusedUpdateTakenBack: an update that takes a conversation at its
// snapshot limit over it is refused and taken back in place (handler_undo.go):
// the next event, a delete that makes room, is applied to the
// conversation as it was before the update, and the stored snapshot is
// Parse of the events accepted.
func TestRefusedUpdateTakenBack(t *testing.T) {
	r := newRefusalRig(t, 1, 64<<10)
	lc := r.convs[0]
	before := r.refused.Load()
	if _, err := r.c.Send(context.Background(), lc.id, streams.TypeMessageUpdated,
		map[string]any{"id": lc.kept[1].ID(), "content": strings.Repeat("u", 20<<10)}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the update refused", func() bool { return r.refused.Load() > before })
	last := lc.kept[len(lc.kept)-1]
	sent, err := r.c.Send(context.Background(), lc.id, streams.TypeMessageDeleted, map[string]any{"id": last.ID()})
	if err != nil {
		t.Fatal(err)
	}
	lc.kept = lc.kept[:len(lc.kept)-1]
	natstest.WaitFor(t, 30*time.Second, "the delete stored", func() bool { return storedAt(r.c, lc.id, sent.Sequence) })
	snap, err := r.c.Snapshot(context.Background(), lc.id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := conversation.Parse(lc.kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := natstest.SnapshotDiff(t, snap, res); d != "" {
		t.Errorf("stored snapshot differs from Parse of the events accepted: %s", d)
	}
}
