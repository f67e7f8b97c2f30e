package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// runExport implements `convctl export [flags] CONV` and
// `convctl export --all DIR`.
func runExport(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	all := fs.Bool("all", false, "export every conversation with a stored snapshot, each to DIR/CONV.json, with progress on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl export [flags] CONV | convctl export --all DIR")
		fmt.Fprintln(stderr, `Prints the conversation CONV as a document {"messages","messageGroups"}: its messages`)
		fmt.Fprintln(stderr, "in append order and its groups, as its checkpoint and the events after it leave them.")
		fmt.Fprintln(stderr, "convctl import (or send --all) sends it back; convctl parse reads it.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "export", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	if !*all && !streams.ValidConversationID(pos[0]) {
		fmt.Fprintf(stderr, "convctl export: conversation id %q must match [A-Za-z0-9_-]{1,128}\n", pos[0])
		return 2
	}
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl export:", err)
		return 1
	}
	defer nc.Close()
	js, subjects := c.JetStream(), c.Subjects()
	src := exportSource{js: js, subjects: subjects, snapshot: c.Snapshot}
	if !*all {
		doc, err := exportConversation(ctx, src, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "convctl export:", err)
			return 1
		}
		if err := writeJSON(stdout, doc); err != nil {
			fmt.Fprintln(stderr, "convctl export:", err)
			return 1
		}
		return 0
	}
	return exportAll(ctx, src, pos[0], stderr)
}

// exportAll writes every conversation with a stored snapshot to
// dir/CONV.json, one at a time (a conversation's events are read into
// memory, never all of them), with a progress bar on stderr. A
// conversation that fails is reported and the others still exported.
func exportAll(ctx context.Context, src exportSource, dir string, stderr io.Writer) int {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "convctl export:", err)
		return 1
	}
	kv, err := src.js.KeyValue(ctx, src.subjects.SnapshotBucket())
	if err != nil {
		fmt.Fprintf(stderr, "convctl export: snapshot bucket %s: %v\n", src.subjects.SnapshotBucket(), err)
		return 1
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		keys, err = nil, nil
	}
	if err != nil {
		fmt.Fprintln(stderr, "convctl export: list conversations:", err)
		return 1
	}
	bar := newProgress(stderr, len(keys))
	failed := 0
	for i, conv := range keys {
		if err := exportFile(ctx, src, conv, filepath.Join(dir, conv+".json")); err != nil {
			bar.clear()
			fmt.Fprintf(stderr, "convctl export: %s: %v\n", conv, err)
			failed++
		}
		bar.update(i + 1)
	}
	bar.clear()
	fmt.Fprintf(stderr, "convctl export: exported %d of %d conversations to %s\n", len(keys)-failed, len(keys), dir)
	if failed > 0 {
		return 1
	}
	return 0
}

// exportFile writes conversation conv's document to path, through a
// temporary file so that a failed export leaves no partial document.
func exportFile(ctx context.Context, src exportSource, conv, path string) error {
	doc, err := exportConversation(ctx, src, conv)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = writeJSON(f, doc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// exportDocument is the document export writes: conversation.Input's
// shape, which conversation.DecodeInput reads back.
type exportDocument struct {
	Messages      []*conversation.Message      `json:"messages"`
	MessageGroups []*conversation.MessageGroup `json:"messageGroups"`
}

// exportSource is where export reads: the events stream, and the stored
// snapshot it checks its replay against.
type exportSource struct {
	js       jetstream.JetStream
	subjects streams.Subjects
	snapshot func(ctx context.Context, conv string) (*streams.Snapshot, error)
}

// exportConversation replays conversation conv's events, read from the
// events stream in order, as the worker applies them, and returns the
// messages and groups they leave. The stored snapshot holds only the
// flatList and contextTree, not every message's fields, so the events are
// the source that gives the messages exactly. A worker compacting the
// stream (worker.WithEventCompaction) purges the events its checkpoint of
// the conversation covers: the replay starts from that checkpoint, and
// starts over when the checkpoint changed while the events after it were
// read (a compaction then may have removed some before they were read).
// An event the conversation refuses is one the worker rejected (rejected
// events are removed from the stream, and may still be there while that
// happens): it is skipped, as the worker skips it. An event of another
// type is refused with an error naming it rather than left out. The
// replay's flatList must name the messages the stored snapshot's does when
// that snapshot stands for the events read: events gone from the stream
// (a retention limit, a purge) fail the export instead of leaving messages
// out in silence.
func exportConversation(ctx context.Context, src exportSource, conv string) (*exportDocument, error) {
	subjects := src.subjects
	stream, err := src.js.Stream(ctx, subjects.EventsStream())
	if err != nil {
		return nil, fmt.Errorf("events stream %s: %w", subjects.EventsStream(), err)
	}
	// No checkpoint bucket: a deployment with checkpoints off, which
	// compacts nothing.
	checkpoints, err := worker.OpenCheckpoints(ctx, src.js, subjects)
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("checkpoint bucket %s: %w", subjects.CheckpointBucket(), err)
	}
	for try := 1; ; try++ {
		c, last, rev, err := replayEvents(ctx, stream, checkpoints, subjects, conv)
		if err != nil && !errors.Is(err, errNoneDelivered) {
			return nil, err
		}
		// Events counted pending and purged before they were delivered
		// (TestExportEraseImport, under load) left their checkpoint
		// changed: read again from it.
		if now, cpErr := checkpoints.Revision(ctx, conv); cpErr != nil {
			return nil, fmt.Errorf("%s: checkpoint: %w", conv, cpErr)
		} else if err != nil && now == rev {
			return nil, err
		} else if now != rev {
			if try == exportTries {
				return nil, fmt.Errorf("%s: its checkpoint changed while its events were read, %d times", conv, try)
			}
			continue
		}
		if err := checkReplay(ctx, src, conv, c, last); err != nil {
			return nil, err
		}
		groups := c.Groups()
		if groups == nil {
			groups = []*conversation.MessageGroup{}
		}
		return &exportDocument{Messages: c.Messages(), MessageGroups: groups}, nil
	}
}

// exportTries is how many times an export starts over from a checkpoint
// that changed while the events after it were read.
const exportTries = 4

// errNoneDelivered is the error of a fetch that ended, after
// exportFetchWait, with none of the events counted pending: compaction may
// have purged them meanwhile.
var errNoneDelivered = errors.New("none delivered")

// exportFetchWait bounds each fetch of a conversation's events.
const exportFetchWait = 10 * time.Second

// replayEvents returns conversation conv as its checkpoint in checkpoints
// (nil: none) and the events of stream after it leave it, with the
// sequence of the last event read (or the checkpoint's) and the
// checkpoint's revision (0: none).
func replayEvents(ctx context.Context, stream jetstream.Stream, checkpoints *worker.Checkpoints, subjects streams.Subjects, conv string) (*conversation.Conversation, uint64, uint64, error) {
	// No message limit: export restores what the worker holds, whatever
	// limit it runs with.
	noLimit := conversation.WithMaxMessages(0)
	c := conversation.NewConversation(noLimit)
	var last, rev uint64
	cp, err := checkpoints.Read(ctx, conv, noLimit)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, 0, 0, fmt.Errorf("%s: %w", conv, err)
	default:
		c, last, rev = cp.Conversation, cp.Sequence, cp.Revision
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subjects.StoredEvents(conv, partitions(stream.CachedInfo().Config.SubjectTransform))},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	cons, err := stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("read the events of %s: %w", conv, err)
	}
	pending := cons.CachedInfo().NumPending
	if pending == 0 && rev == 0 {
		return nil, 0, 0, fmt.Errorf("%s: %w (no events in %s)", conv, streams.ErrUnknownConversation, subjects.EventsStream())
	}
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 500)), jetstream.FetchMaxWait(exportFetchWait))
		if err != nil {
			return nil, 0, 0, fmt.Errorf("read the events of %s: %w", conv, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, 0, 0, fmt.Errorf("event of %s: %w", conv, err)
			}
			pending, last = md.NumPending, md.Sequence.Stream
			if err := replay(c, m.Headers(), m.Data()); err != nil {
				return nil, 0, 0, fmt.Errorf("event at sequence %d of %s: %w", md.Sequence.Stream, conv, err)
			}
		}
		if err := batch.Error(); err != nil {
			return nil, 0, 0, fmt.Errorf("read the events of %s: %w", conv, err)
		}
		if n == 0 {
			return nil, 0, 0, fmt.Errorf("read the events of %s: %d events pending: %w", conv, pending, errNoneDelivered)
		}
	}
	return c, last, rev, nil
}

// checkReplay compares the ids of the replayed conversation's flatList
// with the stored snapshot's, when the snapshot took every event read
// into account (Sequence) and no later one changed it (Version): then
// they are the same conversation. A snapshot behind or ahead of the
// events read is not compared.
func checkReplay(ctx context.Context, src exportSource, conv string, c *conversation.Conversation, last uint64) error {
	s, err := src.snapshot(ctx, conv)
	if errors.Is(err, streams.ErrUnknownConversation) {
		return nil // events no worker has applied yet
	}
	if err != nil {
		return fmt.Errorf("%s: stored snapshot: %w", conv, err)
	}
	if s.Sequence < last || s.Version > last {
		return nil
	}
	var stored []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(s.FlatList, &stored); err != nil {
		return fmt.Errorf("%s: stored snapshot's flatList: %w", conv, err)
	}
	flat, err := c.FlatList()
	if err != nil {
		return fmt.Errorf("%s: the replayed conversation: %w", conv, err)
	}
	same := len(flat) == len(stored)
	for i := 0; same && i < len(flat); i++ {
		same = flat[i].ID() == stored[i].ID
	}
	if !same {
		return fmt.Errorf("%s: the events stream no longer holds every event of the conversation: the replay's flatList (%d messages) is not the stored snapshot's (%d, version %d); nothing exported", conv, len(flat), len(stored), s.Version)
	}
	return nil
}

// partitions returns the partition count of an events stream's subject
// transform (streams.Subjects.PartitionTransform): the N of its
// {{partition(N,…)}}, 0 for an unpartitioned stream.
func partitions(t *jetstream.SubjectTransformConfig) int {
	if t == nil {
		return 0
	}
	_, rest, ok := strings.Cut(t.Destination, "{{partition(")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(rest, ",")
	v, err := strconv.Atoi(n)
	if err != nil {
		return 0
	}
	return v
}

// replay applies one stored event to c.
func replay(c *conversation.Conversation, h nats.Header, payload []byte) error {
	ev, err := streams.DecodeEvent(h, payload)
	if err != nil {
		return err
	}
	data, err := streams.DecodeData(ev)
	if err != nil {
		return err
	}
	id, _ := data["id"].(string)
	switch ev.Type() {
	case streams.TypeMessageAppended:
		m, err := conversation.NewMessage(data)
		if err == nil {
			_ = c.Append(m) // refused: the worker rejected it too
		}
	case streams.TypeMessageUpdated:
		_ = c.Update(id, data)
	case streams.TypeMessageDeleted:
		_ = c.Delete(id)
	case streams.TypeGroupsUpserted:
		if g, err := conversation.NewMessageGroup(data); err == nil {
			_ = c.UpsertGroup(g)
		}
	case streams.TypeMessageCompleted:
		// A streamed reply's chunks are not events: the events stream holds
		// its placeholder and its completion, which carries the whole
		// content, as a rebuild of the worker reads it.
		var done streams.MessageCompleted
		raw, err := json.Marshal(data)
		if err == nil && json.Unmarshal(raw, &done) == nil && slices.Contains(streams.EndStatuses, done.Status) {
			if _, ok := data["content"].(string); ok {
				_ = c.Update(id, done.Patch())
			}
		}
	default:
		return fmt.Errorf("%s events cannot be exported: only %s, %s, %s, %s and %s are replayed", ev.Type(),
			streams.TypeMessageAppended, streams.TypeMessageUpdated, streams.TypeMessageDeleted, streams.TypeGroupsUpserted, streams.TypeMessageCompleted)
	}
	return nil
}

// runImport implements `convctl import [flags] CONV FILE`: send --all
// --wait of an exported document, into any conversation id and, with
// --subject-prefix, any prefix.
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if asksHelp(args) {
		fmt.Fprintln(stderr, "usage: convctl import [send flags] CONV FILE")
		fmt.Fprintln(stderr, "Sends the document convctl export wrote (FILE, stdin for -) to conversation CONV,")
		fmt.Fprintln(stderr, "which may be another id, or with --subject-prefix another prefix: its groups, then")
		fmt.Fprintln(stderr, "every message in order, waiting until the worker has applied each. The flags are")
		fmt.Fprintln(stderr, "those of convctl send (convctl help send).")
		return 0
	}
	return runSend(ctx, append([]string{"--all", "--wait"}, args...), stdin, stdout, stderr)
}
