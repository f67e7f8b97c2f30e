package erasuretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// uniqueMarker returns a string no test run shares.
func uniqueMarker(prefix string) string {
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	return prefix + "-" + hex.EncodeToString(raw)
}

// blockFile reports whether a hit of storedHits is in a stream's block
// file (not in a Raft log, which is under $SYS).
func blockFile(hit string) bool {
	return strings.Contains(hit, " file ") && !strings.Contains(hit, "$SYS") && strings.HasSuffix(hit, ".blk")
}

// storedHits returns where the stores hold marker: every message of every
// stream of the account, KV streams' history included, read raw, and
// every file under each server's store directory (every replica's block
// files, indexes and Raft logs).
func storedHits(t testing.TB, js jetstream.JetStream, servers []*server.Server, marker []byte) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var hits []string
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			continue
		}
		// By sequence: a work-queue stream takes no ordered consumer.
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(m.Data, marker) || bytes.Contains([]byte(fmt.Sprint(m.Header)), marker) {
				hits = append(hits, fmt.Sprintf("stream %s seq %d (%s)", name, seq, m.Subject))
			}
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range servers {
		dir := ns.JetStreamConfig().StoreDir
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			if err != nil {
				return err
			}
			if bytes.Contains(b, marker) {
				rel, _ := filepath.Rel(dir, path)
				hits = append(hits, fmt.Sprintf("server %s file %s", ns.Name(), rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return hits
}

// TestEraseEverywhere erases a conversation on a 3-node cluster (streams
// and buckets of 3 replicas, a partitioned events stream, two workers)
// whose content is in every store the worker uses: events, reply chunks,
// its snapshot and checkpoint, an error record, a waiting reply request.
// Then no stream (raw messages, KV history) and no file under any server's
// store directory holds a byte of its content; the receipt counts what
// went; the other conversations still equal Parse; and an event sent to
// the erased conversation afterwards starts a new one.
func TestEraseEverywhere(t *testing.T) {
	servers := natstest.StartCluster(t, 3)
	storage := worker.Storage{StreamReplicas: 3, BucketReplicas: 3, Partitions: 3}
	workers := make([]*worker.Worker, 2)
	for i := range workers {
		nc, err := nats.Connect(natstest.ClusterURLs(servers, i), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		workers[i], _ = workertest.Run(t, nc, worker.WithLogger(natstest.TestLogger(t)), worker.WithStorage(storage), worker.WithLanes(2), worker.WithCacheTTL(time.Second))
	}
	pub, err := nats.Connect(natstest.ClusterURLs(servers, 2), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	c := natstest.NewClient(t, pub)
	// The context covers the whole test: the wait for the Raft logs to
	// compact below takes about 3 minutes alone, and its own bound is 5.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// marker is in all the conversation's content, final only in what is
	// stored of it at the erasure: its last event (content and id) and
	// the snapshot that event made, the last one stored.
	marker, final := uniqueMarker("secret"), uniqueMarker("final")
	const target = "erase-me"
	want := map[string]*conversation.Conversation{}
	last := map[string]uint64{}
	send := func(conv, typ string, data map[string]any, opts ...client.SendOption) {
		t.Helper()
		sent, err := c.Send(ctx, conv, typ, data, opts...)
		if err != nil {
			t.Fatal(err)
		}
		last[conv] = max(last[conv], sent.Sequence)
	}
	for _, conv := range []string{"keep-a", "keep-b", target, "keep-c"} {
		live := conversation.NewConversation()
		parent := any(nil)
		for j := range 4 {
			content := fmt.Sprintf("message %d of %s", j, conv)
			if conv == target {
				content += " " + marker
			}
			data := map[string]any{"id": fmt.Sprintf("m%d", j), "role": []string{"user", "assistant"}[j%2],
				"content": content, "parentId": parent, "createdAt": 1000 + j}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := live.Append(m); err != nil {
				t.Fatal(err)
			}
			send(conv, streams.TypeMessageAppended, data)
			parent = data["id"]
		}
		want[conv] = live
	}
	send(target, streams.TypeMessageUpdated, map[string]any{"id": "m1", "content": "edited " + marker})
	natstest.CheckStoredAt(t, c, map[string]*conversation.Conversation{"keep-a": want["keep-a"]}, last, 60*time.Second)

	// The checkpoint: written when the worker lets the conversation go
	// (the cache TTL).
	js := c.JetStream()
	cpBucket, err := js.KeyValue(ctx, c.Subjects().CheckpointBucket())
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 60*time.Second, "the checkpoint of "+target, func() bool {
		_, err := cpBucket.Get(ctx, target)
		return err == nil
	})
	// An error record (an update of a message that is not there), a
	// reply request no orchestrator takes, a reply being written.
	send(target, streams.TypeMessageUpdated, map[string]any{"id": "missing", "content": marker})
	if _, err := c.RequestReply(ctx, streams.ReplyRequest{ConversationID: target, Params: map[string]any{"note": marker}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartReply(ctx, target, map[string]any{"id": "r1", "role": "assistant", "parentId": "m3", "content": ""}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendChunk(ctx, target, streams.MessageChunk{ID: "r1", Seq: 1, Text: "streamed " + marker}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 60*time.Second, "the error record of "+target, func() bool {
		errs, err := c.Errors(ctx, target)
		return err == nil && len(errs) > 0
	})
	send(target, streams.TypeMessageUpdated, map[string]any{"id": "m2", "content": "edited " + final}, client.WithEventID("update-"+final))
	natstest.WaitVersion(t, c, target, last[target], 60*time.Second)
	for _, m := range []string{marker, final} {
		if hits := storedHits(t, js, servers, []byte(m)); len(hits) == 0 {
			t.Fatalf("the scan finds no copy of %s before the erasure: it would find none after", m)
		}
	}

	eraser, err := nats.Connect(natstest.ClusterURLs(servers, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eraser.Close)
	receipt, err := natstest.NewClient(t, eraser).Erase(ctx, target, "TestEraseEverywhere")
	if err != nil {
		t.Fatal(err)
	}
	e := receipt.Erased
	t.Logf("receipt: %+v", receipt)
	// Of the events, compaction (on by default) left the last one the
	// checkpoint covers, then came the reply's append and the last update.
	if e.Events < 3 || e.Chunks != 1 || e.Snapshots < 1 || e.Checkpoints < 1 || e.Errors < 1 || e.Replies != 1 || e.Workers != len(workers) {
		t.Errorf("receipt counts %+v: want every store's copies (3 events or more, 1 chunk, a snapshot, a checkpoint, an error record, 1 reply request) and %d workers", e, len(workers))
	}
	if receipt.By != "TestEraseEverywhere" || receipt.Conversation != target || receipt.ErasedAt.IsZero() || receipt.Format != streams.ReceiptFormat {
		t.Errorf("receipt %+v: want its format, the conversation, who asked and when", receipt)
	}
	kept, err := js.Stream(ctx, c.Subjects().ReceiptsStream())
	if err != nil {
		t.Fatal(err)
	}
	if m, err := kept.GetLastMsgForSubject(ctx, c.Subjects().Receipts(target)); err != nil {
		t.Errorf("receipt not kept: %v", err)
	} else if bytes.Contains(m.Data, []byte(marker)) {
		t.Errorf("the receipt holds content: %s", m.Data)
	}

	// What was stored at the erasure is gone everywhere: no stream holds
	// a message with the content, and no file a byte of final. The Raft
	// logs of the replicated streams keep what was proposed until the
	// server compacts them (every 2 to 3 minutes). Content JetStream had
	// removed before (the snapshots the last one superseded, the rejected
	// event) was no stored message at the erasure; its bytes stay in the
	// block files until the server compacts the block (docs/events.md):
	// logged, not failed.
	start := time.Now()
	for {
		finalHits := storedHits(t, js, servers, []byte(final))
		var removedBefore, stored []string
		for _, h := range storedHits(t, js, servers, []byte(marker)) {
			if blockFile(h) {
				removedBefore = append(removedBefore, h)
			} else {
				stored = append(stored, h)
			}
		}
		if len(finalHits) == 0 && len(stored) == 0 {
			t.Logf("nothing stored after %v; bytes JetStream removed before the erasure, still in block files: %q",
				time.Since(start).Round(time.Second), removedBefore)
			break
		}
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("the erased conversation is still stored: %q %q", finalHits, stored)
		}
		time.Sleep(5 * time.Second)
	}

	delete(want, target)
	natstest.CheckStoredAt(t, c, want, last, 60*time.Second)

	// Afterwards the id starts a new conversation.
	fresh := conversation.NewConversation()
	data := map[string]any{"id": "n0", "role": "user", "content": "a new start", "createdAt": 5000}
	m, err := conversation.NewMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Append(m); err != nil {
		t.Fatal(err)
	}
	send(target, streams.TypeMessageAppended, data)
	natstest.CheckStoredAt(t, c, map[string]*conversation.Conversation{target: fresh}, last, 60*time.Second)
}
