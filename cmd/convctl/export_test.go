package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// storedSnapshot returns the stored flatList and contextTree of conv.
func storedSnapshot(t *testing.T, conv string, flags ...string) (flat, tree string) {
	t.Helper()
	code, out, errOut := convctl(t, "", append([]string{"watch", "--once", conv}, flags...)...)
	var s struct{ FlatList, ContextTree json.RawMessage }
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("watch --once %s: %d %s %s", conv, code, out, errOut)
	}
	return string(s.FlatList), string(s.ContextTree)
}

// corpusDocs returns documents (as `convctl send --all` reads them) of
// every step-th case of the shared conformance corpus files, at most n of
// them (0: no limit), by name: the cases Parse accepts.
func corpusDocs(t *testing.T, files []string, step, n int) map[string]string {
	t.Helper()
	type conformanceCase struct {
		Name  string `json:"name"`
		Input struct {
			Messages      json.RawMessage `json:"messages"`
			MessageGroups json.RawMessage `json:"messageGroups"`
		} `json:"input"`
	}
	docs := map[string]string{}
	for _, f := range files {
		cases, err := testcorpus.Decode[conformanceCase]("../../conversation/testdata/conformance/" + f + ".jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(cases) && (n == 0 || len(docs) < n); i += step {
			doc, _ := json.Marshal(map[string]any{"messages": cases[i].Input.Messages, "messageGroups": cases[i].Input.MessageGroups})
			msgs, groups, err := conversation.DecodeInput(bytes.NewReader(doc))
			if err != nil || len(msgs) == 0 {
				continue
			}
			if _, err := conversation.Parse(msgs, groups); err != nil {
				continue // a case of a refused conversation
			}
			docs[fmt.Sprintf("%s-%d", f, i)] = string(doc)
		}
	}
	return docs
}

// TestExportImport sends a sample of the shared conformance corpus, and a
// conversation changed by updates, a delete, groups and a streamed reply, exports each,
// imports the document into a new conversation id, and checks that the
// imported conversation's stored flatList and contextTree equal the
// original's, in the same subject prefix and in another one (a worker of
// its own on the same server); export --all writes the same documents to
// a directory.
func TestExportImport(t *testing.T) {
	// A one-conversation cache: each conversation sent evicts the one
	// before, whose checkpoint is written and whose events are compacted
	// away (worker.WithEventCompaction, on by default), so that export
	// starts from checkpoints.
	run := workertest.Start(t, worker.WithCacheConversations(1))
	t.Setenv("CONVSTREAM_NATS_URL", run.URL)
	other, err := streams.NewSubjects("tenant2")
	if err != nil {
		t.Fatal(err)
	}
	// The other prefix's events stream is partitioned: export finds a
	// conversation's events under their partition's subjects.
	workertest.Run(t, run.Conn, worker.WithPipelines(workertest.Pipelines()), worker.WithSubjects(other),
		worker.WithStorage(worker.Storage{Partitions: 3}))
	// Every 7th case: a sample across the kinds of each file, short
	// enough for a busy machine.
	docs := corpusDocs(t, []string{"reference-suite", "generated-normal"}, 7, 16)
	if len(docs) < 8 {
		t.Fatalf("only %d corpus conversations sampled", len(docs))
	}

	// A conversation whose events are more than appends.
	if code, out, errOut := convctl(t, demo, "send", "--all", "--wait", "edited"); code != 0 {
		t.Fatalf("send edited: %s %s", out, errOut)
	}
	for _, e := range []struct{ typ, data string }{
		{"updated", `{"id":"u1","metadata":{"activeBranchIndex":0}}`},
		{"updated", `{"id":"a1","content":"A messaging system, edited."}`},
		{"groups", `{"id":"g1","messageIds":["a1","a2"]}`},
		{"deleted", `{"id":"u2"}`},
		{"appended", `{"id":"a3","role":"assistant","content":"","parentId":"u1","createdAt":5,"streamStatus":"streaming"}`},
		{streams.TypeMessageCompleted, `{"id":"a3","status":"done","content":"A streamed reply.","model":"m1","finishReason":"stop"}`},
	} {
		if code, out, errOut := convctl(t, e.data, "send", "--type", e.typ, "--msgpack", "--wait", "edited"); code != 0 {
			t.Fatalf("send %s %s: %s %s", e.typ, e.data, out, errOut)
		}
	}

	convs := []string{"edited"}
	for name, doc := range docs {
		if code, out, errOut := convctl(t, doc, "send", "--all", "--wait", name); code != 0 {
			t.Fatalf("send %s: %d %s %s", name, code, out, errOut)
		}
		convs = append(convs, name)
	}
	def, _ := streams.NewSubjects(streams.DefaultPrefix)
	js, err := jetstream.New(run.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stream, err := js.Stream(ctx, def.EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	storedEvents := func(conv string) uint64 {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(def.Events(conv)))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[def.Events(conv)]
	}
	// Compaction keeps a conversation's last event alone.
	natstest.WaitFor(t, time.Minute, "the events of edited compacted", func() bool { return storedEvents("edited") == 1 })

	dir := t.TempDir()
	for _, conv := range convs {
		code, doc, errOut := convctl(t, "", "export", conv)
		if code != 0 {
			t.Fatalf("export %s: %d %s", conv, code, errOut)
		}
		if _, _, err := conversation.DecodeInput(strings.NewReader(doc)); err != nil {
			t.Fatalf("export %s: the document does not decode: %v\n%s", conv, err, doc)
		}
		if conv == "edited" && (!strings.Contains(doc, "A streamed reply.") || !strings.Contains(doc, "edited.") || strings.Contains(doc, "And JetStream?")) {
			t.Fatalf("export edited: not the conversation as its events leave it:\n%s", doc)
		}
		file := filepath.Join(dir, conv+".json")
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := convctl(t, "", "import", conv+"-imported", file); code != 0 {
			t.Fatalf("import %s: %d %s %s", conv, code, out, errOut)
		}
		flat, tree := storedSnapshot(t, conv)
		iflat, itree := storedSnapshot(t, conv+"-imported")
		if flat != iflat || tree != itree {
			t.Errorf("%s: imported differs\nflatList %s\nimported %s\ncontextTree %s\nimported    %s", conv, flat, iflat, tree, itree)
		}
		if code, out, errOut := convctl(t, "", "import", "--subject-prefix", "tenant2", conv, file); code != 0 {
			t.Fatalf("import %s into tenant2: %d %s %s", conv, code, out, errOut)
		}
		if oflat, otree := storedSnapshot(t, conv, "--subject-prefix", "tenant2"); flat != oflat || tree != otree {
			t.Errorf("%s: imported into tenant2 differs\nflatList %s\nimported %s", conv, flat, oflat)
		}
		if code, again, errOut := convctl(t, "", "export", "--subject-prefix", "tenant2", conv); code != 0 || again != doc {
			t.Errorf("export %s from tenant2: %d %s\n%s\nwant %s", conv, code, errOut, again, doc)
		}
	}

	all := t.TempDir()
	code, _, errOut := convctl(t, "", "export", "--all", all)
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("exported %d of %d", 2*len(convs), 2*len(convs))) {
		t.Fatalf("export --all: %d %s", code, errOut)
	}
	for _, conv := range convs {
		want, _ := os.ReadFile(filepath.Join(dir, conv+".json"))
		got, err := os.ReadFile(filepath.Join(all, conv+".json"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("export --all %s: %v\n%s\nwant %s", conv, err, got, want)
		}
	}

	if code, _, errOut := convctl(t, "", "export", "nothing-here"); code != 1 || !strings.Contains(errOut, "no events") {
		t.Errorf("export of an unknown conversation: %d %s", code, errOut)
	}

	// Events gone from the stream (compacted, and the checkpoint that
	// held them removed by hand here, as an operator might) fail the
	// export rather than leave messages out: only the last event the
	// checkpoint covered and a later edit are left.
	if code, out, errOut := convctl(t, `{"id":"a1","content":"Edited again."}`, "send", "--type", "updated", "--wait", "edited"); code != 0 {
		t.Fatalf("send an edit: %s %s", out, errOut)
	}
	checkpoints, err := js.KeyValue(ctx, def.CheckpointBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoints.Purge(ctx, "edited"); err != nil {
		t.Fatal(err)
	}
	if n := storedEvents("edited"); n != 2 {
		t.Fatalf("edited: %d events stored, want 2", n)
	}
	if code, out, errOut := convctl(t, "", "export", "edited"); code != 1 || out != "" || !strings.Contains(errOut, "no longer holds every event") {
		t.Errorf("export with its first events purged: %d %s %s", code, out, errOut)
	}
}
