package worker

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
)

// TestSnapshotFormats reads snapshots as this release writes them (format
// 1, first), as releases before the stamp wrote them (no format: format 1),
// and refuses one of a newer format with streams.ErrNewerFormat instead of
// reading its version and sequence.
func TestSnapshotFormats(t *testing.T) {
	value, err := encodeSnapshotOf(nil, "c1", 12, 34, func(yield func([]byte) bool) { yield([]byte(`{"id":"m"}`)) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"format":1,"conversationId":"c1",`; !bytes.HasPrefix(value, []byte(want)) {
		t.Errorf("encoded snapshot %.60s..., want it to begin %s", value, want)
	}
	for _, v := range []string{
		string(value),
		`{"conversationId":"c1","version":12,"sequence":34,"flatList":[{"id":"m"}],"contextTree":[]}`,
		`{"format":0,"conversationId":"c1","version":12,"sequence":34,"flatList":[],"contextTree":[]}`,
	} {
		if h, err := snapshotHeadOf([]byte(v)); err != nil || h != (snapshotHead{12, 34}) {
			t.Errorf("%.50s: %+v, %v; want version 12, sequence 34", v, h, err)
		}
	}
	for _, v := range []string{
		`{"format":2,"conversationId":"c1","version":12,"sequence":34,"flatList":[],"contextTree":[]}`,
		`{"format":-1,"version":12,"sequence":34}`,
	} {
		if h, err := snapshotHeadOf([]byte(v)); !errors.Is(err, streams.ErrNewerFormat) {
			t.Errorf("%.50s: %+v, %v; want streams.ErrNewerFormat", v, h, err)
		}
	}
}

// TestCheckpointFormats decodes a checkpoint carrying a field this release
// does not know (what a later release may add without a new format, and a
// rolled-back worker must still read), and refuses one of a newer format
// with streams.ErrNewerFormat.
func TestCheckpointFormats(t *testing.T) {
	msgs := [][]byte{[]byte(`{"id":"a","role":"user","content":"hi"}`)}
	type later struct {
		checkpoint
		Extra string `msgpack:"x"`
	}
	pack := func(v any) []byte {
		plain, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return s2.Encode(nil, plain)
	}
	cp := checkpoint{Format: checkpointFormat, Seq: 5, Version: 5, Events: 1, Messages: msgs, Sum: checkpointSum(msgs, nil)}
	got, conv, err := decodeCheckpoint(pack(later{checkpoint: cp, Extra: "a field of a later release"}))
	if err != nil || got.Seq != 5 || len(conv.Messages()) != 1 {
		t.Fatalf("checkpoint with an unknown field: %+v, %v", got, err)
	}
	cp.Format = checkpointFormat + 1
	if _, _, err := decodeCheckpoint(pack(cp)); !errors.Is(err, streams.ErrNewerFormat) {
		t.Errorf("checkpoint format %d: %v, want streams.ErrNewerFormat", cp.Format, err)
	}
}

// TestNewerSnapshotReported stores a snapshot of a format newer than this
// release reads, as a worker of a later release would, and sends its
// conversation an event: the worker neither applies it over the snapshot
// nor overwrites the snapshot, and /readyz names the conversation and the
// format; the other conversations go on.
func TestNewerSnapshotReported(t *testing.T) {
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	r := StartWorker(t, nc)
	c := natstest.NewClient(t, nc)
	ctx := context.Background()
	kv, err := c.JetStream().KeyValue(ctx, c.Subjects().SnapshotBucket())
	if err != nil {
		t.Fatal(err)
	}
	const id = "later"
	newer := []byte(`{"format":2,"conversationId":"later","version":1,"sequence":1,"flatList":[],"contextTree":[],"moreOfLater":{}}`)
	if _, err := kv.Put(ctx, id, newer); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, id, streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(body, "newer release") {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz says %q, want the newer snapshot named", body)
		}
		time.Sleep(20 * time.Millisecond)
		rec := httptest.NewRecorder()
		r.W.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		body = rec.Body.String()
	}
	if !strings.Contains(body, id) || !strings.Contains(body, "snapshot format 2") {
		t.Errorf("/readyz says %q, want conversation %s and its format named", body, id)
	}
	t.Logf("/readyz: %s", body)
	sent, err := c.Send(ctx, "other", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitVersion(t, c, "other", sent.Sequence, 30*time.Second)
	e, err := kv.Get(ctx, id)
	if err != nil || !bytes.Equal(e.Value(), newer) {
		t.Errorf("the newer snapshot became %s (%v)", e.Value(), err)
	}
	if _, err := c.Snapshot(ctx, id); !errors.Is(err, streams.ErrNewerFormat) {
		t.Errorf("client.Snapshot of the newer snapshot: %v, want streams.ErrNewerFormat", err)
	}
}
