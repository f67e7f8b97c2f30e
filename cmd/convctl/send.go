package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// eventTypes maps the short names send accepts to event types.
var eventTypes = map[string]string{
	"appended": streams.TypeMessageAppended,
	"updated":  streams.TypeMessageUpdated,
	"deleted":  streams.TypeMessageDeleted,
	"groups":   streams.TypeGroupsUpserted,
}

// runSend implements `convctl send [flags] CONV [FILE]`.
func runSend(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	typ := fs.String("type", "appended", "event type: appended, updated, deleted, groups, or a full type name")
	id := fs.String("id", "", `send {"id": ID} as the data (for deleted) instead of reading FILE`)
	all := fs.Bool("all", false, `FILE is a whole conversation ({"messages","messageGroups"} or an array): upsert its groups, then append every message`)
	binary := fs.Bool("binary", false, "binary content mode (ce-* headers) instead of structured")
	msgpack := fs.Bool("msgpack", false, "encode data as application/msgpack instead of JSON")
	eventID := fs.String("event-id", "", "event id (default: a random UUID); with several events, a suffix -N is added")
	wait := fs.Bool("wait", false, "wait (up to --timeout) until the worker has applied or rejected every event; exit 1 on a rejection")
	waitRejections := fs.Duration("wait-rejections", 2*time.Second, "without --wait, how long to wait for the worker to reject an event sent (it stops sooner once every event is applied); exit 1 on a rejection")
	noWait := fs.Bool("no-wait", false, "exit once the events are stored, without waiting for rejections")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl send [flags] CONV [FILE]")
		fmt.Fprintln(stderr, "Publishes message events to the conversation CONV: one event per JSON object in FILE")
		fmt.Fprintln(stderr, "(stdin when absent or -), or with --all every message of a conversation document.")
		fmt.Fprintln(stderr, `Prints {"eventId","type","sequence","duplicate"} per event stored (several events to a`)
		fmt.Fprintln(stderr, "terminal show a progress bar instead), then waits briefly for rejections")
		fmt.Fprintln(stderr, "(--wait-rejections, --no-wait) and ends with a summary on stderr.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "send", stderr)
	if !ok {
		return 2
	}
	if len(pos) < 1 || len(pos) > 2 || (*id != "" && (len(pos) == 2 || *all)) {
		fs.Usage()
		return 2
	}
	conv := arg(pos, 0)
	if !streams.ValidConversationID(conv) {
		fmt.Fprintf(stderr, "convctl send: conversation id %q must match [A-Za-z0-9_-]{1,128}\n", conv)
		return 2
	}
	eventType, ok := eventTypes[*typ]
	if !ok {
		eventType = *typ
	}

	type event struct {
		typ  string
		data any
	}
	var events []event
	switch {
	case *id != "":
		events = append(events, event{eventType, map[string]any{"id": *id}})
	default:
		in, closeIn, err := openInput(arg(pos, 1), stdin)
		if err != nil {
			fmt.Fprintln(stderr, "convctl send:", err)
			return 1
		}
		defer closeIn()
		if *all {
			msgs, groups, err := conversation.DecodeInput(in)
			if err != nil {
				fmt.Fprintln(stderr, "convctl send:", err)
				return 1
			}
			for _, g := range groups {
				events = append(events, event{streams.TypeGroupsUpserted, g})
			}
			for _, m := range msgs {
				events = append(events, event{streams.TypeMessageAppended, m})
			}
		} else {
			dec := json.NewDecoder(bufio.NewReader(in))
			for {
				var obj json.RawMessage
				if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					fmt.Fprintf(stderr, "convctl send: data object %d: %v\n", len(events)+1, err)
					return 1
				}
				if isDocument(obj) {
					fmt.Fprintf(stderr, "convctl send: data object %d is a whole conversation document (messages, not a message): send it with --all to append every message\n", len(events)+1)
					return 2
				}
				events = append(events, event{eventType, obj})
			}
		}
	}
	if len(events) == 0 {
		fmt.Fprintln(stderr, "convctl send: nothing to send")
		return 1
	}

	tp, flush := tracing(ctx, stderr)
	defer flush()
	// One span for the command: the events it sends, and what the worker
	// does with them, are one trace (TestOneTraceFromSenderToProcessors).
	ctx, span := commandSpan(ctx, tp, "convctl send", conv)
	defer span.End()
	nc, c, err := nf.client(client.WithTracerProvider(tp))
	if err != nil {
		fmt.Fprintln(stderr, "convctl send:", err)
		return 1
	}
	defer nc.Close()
	var w *waiter
	if *wait || !*noWait {
		if w, err = newWaiter(nc, nf.Prefix, conv); err != nil {
			fmt.Fprintln(stderr, "convctl send:", err)
			return 1
		}
		defer w.close()
	}
	start := time.Now()
	bar := newProgress(stderr, len(events))
	// A line per event is for a script; on a terminal, thousands of them
	// would bury the summary, so the bar stands for them there.
	lines := len(events) == 1 || !isTerminal(stdout)
	enc := json.NewEncoder(stdout)
	for i, e := range events {
		var opts []client.SendOption
		if *binary {
			opts = append(opts, client.WithMode(streams.Binary))
		}
		if *msgpack {
			opts = append(opts, client.WithContentType(streams.ContentTypeMsgpack))
		}
		if *eventID != "" {
			eid := *eventID
			if len(events) > 1 {
				eid = fmt.Sprintf("%s-%d", eid, i+1)
			}
			opts = append(opts, client.WithEventID(eid))
		}
		sctx, cancel := context.WithTimeout(ctx, nf.timeout)
		sent, err := c.Send(sctx, conv, e.typ, e.data, opts...)
		cancel()
		if err != nil {
			bar.clear()
			fmt.Fprintf(stderr, "convctl send: event %d of %d: %v\n", i+1, len(events), sendError(err, nf.Prefix))
			fmt.Fprintf(stderr, "convctl send: sent %d of %d, in %s\n", i, len(events), roundDuration(time.Since(start)))
			return 1
		}
		if lines {
			_ = enc.Encode(map[string]any{"eventId": sent.EventID, "type": e.typ, "sequence": sent.Sequence, "duplicate": sent.Duplicate})
		}
		if w != nil {
			w.expect(sent)
		}
		bar.update(i + 1)
	}
	bar.clear()
	code := 0
	var rejected []streams.EventRejected
	if w != nil {
		// With --wait every event must be applied within --timeout; else
		// the wait is a short look for rejections, which ends early once
		// the snapshot covers every event sent.
		limit := *waitRejections
		if *wait {
			limit = nf.timeout
		}
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		var err error
		rejected, err = w.wait(wctx, c)
		for _, r := range rejected {
			fmt.Fprintf(stderr, "convctl send: event %s rejected: %s: %s\n", deref(r.EventID), r.Code, r.Reason)
		}
		switch {
		case err != nil && *wait:
			fmt.Fprintln(stderr, "convctl send:", err)
			code = 1
		case err != nil:
			fmt.Fprintf(stderr, "convctl send: %d events not applied within %s; later rejections: convctl errors %s\n", len(w.pending), limit, conv)
		}
		if len(rejected) > 0 {
			code = 1
		}
	}
	fmt.Fprintf(stderr, "convctl send: sent %d, rejected %d, in %s\n", len(events), len(rejected), roundDuration(time.Since(start)))
	return code
}

// isDocument reports whether a data object is a whole conversation
// ({"messages": [...]}, or an array of messages), which only --all sends.
func isDocument(obj json.RawMessage) bool {
	var doc struct {
		ID       json.RawMessage   `json:"id"`
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(obj, &doc) == nil {
		return doc.ID == nil && doc.Messages != nil
	}
	var arr []json.RawMessage
	return json.Unmarshal(obj, &arr) == nil
}

// roundDuration is d as a summary shows it.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// waiter follows what the worker made of the events sent: their rejections
// on the errors subject and the sequence of the stored snapshot.
type waiter struct {
	conv    string
	sub     *nats.Subscription
	pending map[string]uint64 // event id → stream sequence
}

func newWaiter(nc *nats.Conn, prefix, conv string) (*waiter, error) {
	subjects, err := streams.NewSubjects(prefix)
	if err != nil {
		return nil, err
	}
	// Subscribe before sending so that no rejection is missed.
	sub, err := nc.SubscribeSync(subjects.Errors(conv))
	if err != nil {
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	return &waiter{conv: conv, sub: sub, pending: map[string]uint64{}}, nil
}

func (w *waiter) expect(s *client.Sent) { w.pending[s.EventID] = s.Sequence }

func (w *waiter) close() { _ = w.sub.Unsubscribe() }

// wait returns when every event is rejected or covered by the stored
// snapshot, with the rejections seen.
func (w *waiter) wait(ctx context.Context, c *client.Client) ([]streams.EventRejected, error) {
	var rejected []streams.EventRejected
	for {
		for {
			m, err := w.sub.NextMsg(time.Millisecond)
			if err != nil {
				break
			}
			ev, err := streams.DecodeEvent(m.Header, m.Data)
			if err != nil {
				continue
			}
			var r streams.EventRejected
			if json.Unmarshal(ev.Data(), &r) != nil || r.EventID == nil {
				continue
			}
			if _, ok := w.pending[*r.EventID]; ok {
				delete(w.pending, *r.EventID)
				rejected = append(rejected, r)
			}
		}
		if s, err := c.Snapshot(ctx, w.conv); err == nil {
			for id, seq := range w.pending {
				if seq <= s.Sequence {
					delete(w.pending, id)
				}
			}
		}
		if len(w.pending) == 0 {
			return rejected, nil
		}
		select {
		case <-ctx.Done():
			return rejected, fmt.Errorf("%d events not applied yet: %w", len(w.pending), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(no id)"
	}
	return *s
}

// sendError explains a send no stream answered: nothing stores the
// conversation's events subject, which is a wrong --subject-prefix or no
// worker ever started with it.
func sendError(err error, prefix string) error {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("no stream stores the events of subject prefix %q: check --subject-prefix (CONVSTREAM_SUBJECT_PREFIX), or start a worker with that prefix, which creates its streams: %w", prefix, err)
	}
	return err
}
