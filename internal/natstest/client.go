package natstest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// NewClient returns a client of the worker on nc.
func NewClient(t testing.TB, nc *nats.Conn, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CheckStored waits for the stored snapshot of each conversation of want
// to catch up, and requires it to equal Parse of the conversation.
func CheckStored(t testing.TB, c *client.Client, want map[string]*conversation.Conversation, timeout time.Duration) {
	t.Helper()
	last := map[string]uint64{}
	for conv := range want {
		last[conv] = LastEventSeq(t, c, conv)
	}
	CheckStoredAt(t, c, want, last, timeout)
}

// CheckStoredAt is CheckStored with each conversation's last event given
// (as its publish acknowledged it): in a cluster, the stream's last event
// read back (LastEventSeq) may come from a replica behind the leader.
func CheckStoredAt(t testing.TB, c *client.Client, want map[string]*conversation.Conversation, last map[string]uint64, timeout time.Duration) {
	t.Helper()
	for conv, live := range want {
		snap := WaitVersion(t, c, conv, last[conv], timeout)
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := SnapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
}

// WaitCaughtUp waits until the stored snapshot of conv covers the last
// event of conv in the events stream (which must be one that applies:
// versions are event sequences) and returns it.
func WaitCaughtUp(t testing.TB, c *client.Client, conv string, timeout time.Duration) *streams.Snapshot {
	t.Helper()
	return WaitVersion(t, c, conv, LastEventSeq(t, c, conv), timeout)
}

// LastEventSeq returns the stream sequence of the last event of conv (on an
// unpartitioned stream).
func LastEventSeq(t testing.TB, c *client.Client, conv string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.JetStream().Stream(ctx, c.Subjects().EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, c.Subjects().Events(conv))
	if err != nil {
		t.Fatalf("last event of %s: %v", conv, err)
	}
	return m.Sequence
}

// WaitVersion waits until the stored snapshot of conv reaches version (the
// sequence of the last event that changed it) and returns it.
func WaitVersion(t testing.TB, c *client.Client, conv string, version uint64, timeout time.Duration) *streams.Snapshot {
	t.Helper()
	var snap *streams.Snapshot
	var last error
	deadline := time.Now().Add(timeout)
	for {
		s, err := c.Snapshot(context.Background(), conv)
		if err == nil && s.Version >= version {
			snap = s
			break
		}
		// Any error is tried again until the deadline: a cluster electing
		// the bucket's leader (a server back from a freeze,
		// TestClusterFaults) times reads out for a while.
		if err != nil && !errors.Is(err, streams.ErrUnknownConversation) {
			last = err
		}
		if time.Now().After(deadline) {
			got := uint64(0)
			if s != nil {
				got = s.Version
			}
			t.Fatalf("snapshot %s: version %d after %v, want %d (last error: %v)", conv, got, timeout, version, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return snap
}

// Decoded returns v as encoding/json decodes it.
func Decoded(t testing.TB, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// SnapshotDiff compares a snapshot with a parse result: "" when equal.
func SnapshotDiff(t testing.TB, snap *streams.Snapshot, res *conversation.Result) string {
	t.Helper()
	if d := jsondiff.Diff(Decoded(t, res.FlatList), Decoded(t, snap.FlatList)); d != "" {
		return "flatList " + d
	}
	if d := jsondiff.Diff(Decoded(t, res.ContextTree), Decoded(t, snap.ContextTree)); d != "" {
		return "contextTree " + d
	}
	return ""
}
