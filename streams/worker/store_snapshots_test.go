package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// corpusSize is how many conformance conversations the integration tests
// replay: enough to meet every shape (branches, compare groups, tasks,
// councils, signals), few enough for a 2-core CI machine.
func corpusSize() (normal, reference int) {
	if testing.Short() {
		return 8, 4
	}
	return 30, 10
}

// sendConversation publishes a corpus conversation as events: its groups,
// then its messages in order. Modes and encodings vary by index so that
// every combination is exercised.
func sendConversation(t testing.TB, c *client.Client, conv string, i int, cc natstest.CorpusCase) int {
	t.Helper()
	ctx := context.Background()
	opts := []client.SendOption{}
	if i%2 == 1 {
		opts = append(opts, client.WithMode(streams.Binary))
	}
	if i%3 == 2 {
		opts = append(opts, client.WithContentType(streams.ContentTypeMsgpack))
	}
	n := 0
	for _, g := range cc.Groups {
		natstest.CheckData(t, streams.TypeGroupsUpserted, g)
		if _, err := c.Send(ctx, conv, streams.TypeGroupsUpserted, g, opts...); err != nil {
			t.Fatal(err)
		}
		n++
	}
	for _, m := range cc.Msgs {
		natstest.CheckData(t, streams.TypeMessageAppended, m)
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, m, opts...); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestSnapshotsEqualParse appends conformance conversations one event at a
// time and requires every final snapshot to equal conversation.Parse of the
// input and the reference's own output; then updates and deletes messages
// and requires the snapshots to follow a local conversation.Conversation
// given the same changes. Every published delta is checked against the
// schemas, versions must follow each other, and the deltas applied in
// order must give the stored flatList.
func TestSnapshotsEqualParse(t *testing.T) {
	nNormal, nRef := corpusSize()
	cases := append(natstest.LoadCorpus(t, "generated-normal.jsonl.gz", nNormal), natstest.LoadCorpus(t, "reference-suite.jsonl.gz", nRef)...)
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	snaps := natstest.Record(t, nc, "convstream.snapshots.>")
	errs := natstest.Record(t, nc, "convstream.errors.>")
	StartWorker(t, nc, WithCacheConversations(8), WithLanes(4))
	c := natstest.NewClient(t, nc)

	start := time.Now()
	counts := make([]int, len(cases))
	total := 0
	for i, cc := range cases {
		counts[i] = sendConversation(t, c, natstest.CaseID(i), i, cc)
		total += counts[i]
	}
	for i, cc := range cases {
		snap := natstest.WaitCaughtUp(t, c, natstest.CaseID(i), 60*time.Second)
		want, err := conversation.Parse(cc.Msgs, cc.Groups)
		if err != nil {
			t.Fatal(err)
		}
		if d := natstest.SnapshotDiff(t, snap, want); d != "" {
			t.Errorf("%s (%s): snapshot differs from Parse: %s", natstest.CaseID(i), cc.Name, d)
		}
		var ref struct {
			FlatList    any `json:"flatList"`
			ContextTree any `json:"contextTree"`
		}
		if err := json.Unmarshal(cc.Expected, &ref); err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(ref.FlatList, natstest.Decoded(t, snap.FlatList)); d != "" {
			t.Errorf("%s (%s): flatList differs from the reference: %s", natstest.CaseID(i), cc.Name, d)
		}
		if d := jsondiff.Diff(ref.ContextTree, natstest.Decoded(t, snap.ContextTree)); d != "" {
			t.Errorf("%s (%s): contextTree differs from the reference: %s", natstest.CaseID(i), cc.Name, d)
		}
	}
	t.Logf("%d conversations, %d append/groups events: all snapshots stored in %v", len(cases), total, time.Since(start))

	// Updates and deletes, mirrored on local conversations.
	ctx := context.Background()
	for i, cc := range cases {
		conv := natstest.CaseID(i)
		live := conversation.NewConversation()
		for _, g := range cc.Groups {
			_ = live.UpsertGroup(g)
		}
		for _, m := range cc.Msgs {
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		events := counts[i]
		first := cc.Msgs[0].ID()
		patches := []map[string]any{
			{"id": first, "content": fmt.Sprintf("edited %d", i), "metadata": map[string]any{"edited": true}},
			{"id": first, "metadata": map[string]any{"edited": nil}},
		}
		// Switching a branch: the last message with an activeBranchIndex
		// gets another one.
		for j := len(cc.Msgs) - 1; j >= 0; j-- {
			if md, ok := cc.Msgs[j].Fields()["metadata"].(map[string]any); ok {
				if _, ok := md["activeBranchIndex"]; ok {
					patches = append(patches, map[string]any{"id": cc.Msgs[j].ID(), "metadata": map[string]any{"activeBranchIndex": 0.0}}) // float64, as JSON decodes it
					break
				}
			}
		}
		for _, p := range patches {
			natstest.CheckData(t, streams.TypeMessageUpdated, p)
			if _, err := c.Send(ctx, conv, streams.TypeMessageUpdated, p); err != nil {
				t.Fatal(err)
			}
			if err := live.Update(p["id"].(string), p); err != nil {
				t.Fatal(err)
			}
			events++
		}
		last := cc.Msgs[len(cc.Msgs)-1].ID()
		if _, err := c.Send(ctx, conv, streams.TypeMessageDeleted, map[string]any{"id": last}); err != nil {
			t.Fatal(err)
		}
		if err := live.Delete(last); err != nil {
			t.Fatal(err)
		}
		events++
		if len(cc.Msgs) > 2 {
			mid := cc.Msgs[len(cc.Msgs)/2].ID()
			if _, err := c.Send(ctx, conv, streams.TypeMessageDeleted, map[string]any{"id": mid}); err != nil {
				t.Fatal(err)
			}
			if err := live.Delete(mid); err != nil {
				t.Fatal(err)
			}
			events++
		}
		// Re-appending the last message after its deletion puts it at the end
		// of the append order.
		if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, cc.Msgs[len(cc.Msgs)-1]); err != nil {
			t.Fatal(err)
		}
		if err := live.Append(cc.Msgs[len(cc.Msgs)-1]); err != nil {
			t.Fatal(err)
		}
		events++
		counts[i] = events
		want, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		snap := natstest.WaitCaughtUp(t, c, conv, 30*time.Second)
		if d := natstest.SnapshotDiff(t, snap, want); d != "" {
			t.Errorf("%s (%s): after updates and deletes: %s", conv, cc.Name, d)
		}
	}

	// Every delta published is valid, versions follow each other, and the
	// deltas applied in order give the stored flatList.
	natstest.WaitFor(t, 10*time.Second, "all deltas published", func() bool {
		n := 0
		for _, k := range counts {
			n += k
		}
		return snaps.Count("") >= n
	})
	views := map[string]*streams.View{}
	for _, r := range snaps.All() {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Subject, r.Err)
		}
		natstest.CheckEvent(t, r.Event)
		if r.Event.Type() != streams.TypeSnapshotDelta {
			t.Fatalf("%s: type %s", r.Subject, r.Event.Type())
		}
		var d streams.SnapshotDelta
		if err := json.Unmarshal(r.Event.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if r.Subject != "convstream.snapshots."+d.ConversationID {
			t.Errorf("delta of %s on %s", d.ConversationID, r.Subject)
		}
		v := views[d.ConversationID]
		if v == nil {
			v = &streams.View{ConversationID: d.ConversationID}
			views[d.ConversationID] = v
		}
		if d.Version <= v.Version || d.BaseVersion != v.Version {
			t.Errorf("%s: delta %d (base %d) after version %d", d.ConversationID, d.Version, d.BaseVersion, v.Version)
		}
		if !v.Apply(&d) {
			t.Fatalf("%s: delta %d does not apply", d.ConversationID, d.Version)
		}
	}
	for i := range cases {
		conv := natstest.CaseID(i)
		snap := natstest.WaitCaughtUp(t, c, conv, 10*time.Second)
		v := views[conv]
		if v == nil || v.Version != snap.Version {
			got := uint64(0)
			if v != nil {
				got = v.Version
			}
			t.Errorf("%s: deltas reach version %d, stored %d", conv, got, snap.Version)
			continue
		}
		flat, err := json.Marshal(v.FlatList)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsondiff.Diff(natstest.Decoded(t, snap.FlatList), natstest.Decoded(t, json.RawMessage(flat))); d != "" {
			t.Errorf("%s: deltas applied differ from the stored flatList: %s", conv, d)
		}
	}
	if n := errs.Count(""); n != 0 {
		t.Errorf("%d rejections, want none: %+v", n, errs.All()[0].Event)
	}
}

// TestSnapshotHeadOf reads the head of encoded snapshots and of objects
// with the fields in other orders, and refuses what is not an object.
func TestSnapshotHeadOf(t *testing.T) {
	big := strings.Repeat(`{"id":"m","role":"user","content":"x"},`, 1000)
	big = big[:len(big)-1]
	for _, tc := range []struct {
		value string
		want  snapshotHead
	}{
		{`{"conversationId":"c","version":7,"sequence":9,"flatList":[` + big + `],"contextTree":[]}`, snapshotHead{7, 9}},
		{`{"flatList":[` + big + `],"sequence":3,"contextTree":[],"version":2}`, snapshotHead{2, 3}},
		{` { "version" : 1 } `, snapshotHead{Version: 1}},
		{`{}`, snapshotHead{}},
	} {
		h, err := snapshotHeadOf([]byte(tc.value))
		if err != nil || h != tc.want {
			t.Errorf("%.60s: %+v, %v; want %+v", tc.value, h, err, tc.want)
		}
	}
	value, err := encodeSnapshotOf(nil, "c1", 12, 34, func(yield func([]byte) bool) { yield([]byte(`{"id":"m"}`)) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := snapshotHeadOf(value); err != nil || h != (snapshotHead{12, 34}) {
		t.Errorf("an encoded snapshot: %+v, %v", h, err)
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"version":"7"}`, `{"version":`, `{"flatList":[`} {
		if h, err := snapshotHeadOf([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, no error", bad, h)
		}
	}
}
