package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// runChat implements `convctl chat [flags] CONV TEXT`.
func runChat(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	parent := fs.String("parent", "", "id of the message the user's message answers (default: the last of the active path)")
	model := fs.String("model", "", "model of the reply: builtin, openai:MODEL, anthropic:MODEL, gemini:MODEL (default: the orchestrator's)")
	replyTimeout := fs.Duration("reply-timeout", 5*time.Minute, "longest wait for the whole reply")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl chat [flags] CONV TEXT")
		fmt.Fprintln(stderr, "Appends TEXT as the user's message to conversation CONV, asks an orchestrator for the")
		fmt.Fprintln(stderr, "reply (make run writes it with the built-in model) and prints the reply as it is written.")
		fmt.Fprintln(stderr, "Exit status 0 when the reply is done, 1 when it ends stopped, interrupted or in error.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "chat", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 2 {
		fs.Usage()
		return 2
	}
	conv, text := pos[0], pos[1]
	if !streams.ValidConversationID(conv) {
		fmt.Fprintf(stderr, "convctl chat: conversation id %q must match [A-Za-z0-9_-]{1,128}\n", conv)
		return 2
	}
	tp, flush := tracing(ctx, stderr)
	defer flush()
	nc, c, err := nf.client(client.WithTracerProvider(tp), client.WithSource("urn:convstream:convctl"))
	if err != nil {
		fmt.Fprintln(stderr, "convctl chat:", err)
		return 1
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, *replyTimeout)
	defer cancel()
	// One trace from the user's message to the reply's last chunk.
	ctx, span := tp.Tracer("github.com/convstream/convstream/cmd/convctl").Start(ctx, "chat "+conv)
	defer span.End()

	if *parent == "" {
		*parent = activeLeaf(ctx, c, conv)
	}
	// Follow first: no delta of the reply is missed.
	views, err := c.Follow(ctx, conv, 5*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "convctl chat:", err)
		return 1
	}
	userID, replyID := "msg-"+uuid.NewString(), "reply-"+uuid.NewString()
	user := map[string]any{"id": userID, "role": "user", "content": text}
	if *parent != "" {
		user["parentId"] = *parent
	}
	if _, err := c.Send(ctx, conv, streams.TypeMessageAppended, user); err != nil {
		fmt.Fprintln(stderr, "convctl chat:", err)
		return 1
	}
	sent, err := c.RequestReply(ctx, streams.ReplyRequest{ConversationID: conv, UserMessageID: userID, MessageID: replyID, Model: *model})
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		fmt.Fprintf(stderr, "convctl chat: no replies stream for subject prefix %q: start an orchestrator (make run, or cmd/orchestrator): %v\n", nf.Prefix, err)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "convctl chat:", err)
		return 1
	}
	printed := 0
	// A refused request (an unknown model, one without its key) is
	// recorded on the conversation's errors, not in it.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var v *streams.View
		select {
		case <-tick.C:
			if why := refusal(ctx, c, conv, sent.EventID); why != "" {
				fmt.Fprintln(stderr, "convctl chat: the reply request was refused:", why)
				return 1
			}
			continue
		case v = <-views:
		}
		if v == nil {
			break
		}
		m := findEntry(v.FlatList, replyID)
		if m == nil {
			continue
		}
		content, _ := m["content"].(string)
		if len(content) > printed && strings.HasPrefix(content, content[:printed]) {
			fmt.Fprint(stdout, content[printed:])
			printed = len(content)
		}
		status, _ := m[streams.FieldStreamStatus].(string)
		if status == "" || status == streams.StreamStreaming {
			continue
		}
		fmt.Fprintln(stdout)
		printCalls(stdout, m)
		// The next command reads the stored snapshot (the next chat its
		// leaf), which the worker writes up to --snapshot-interval after
		// the delta printed: wait for it, briefly.
		awaitStored(ctx, c, conv, v.Version)
		if status == streams.StreamDone {
			return 0
		}
		why := status
		if e, ok := m["error"].(map[string]any); ok {
			b, _ := json.Marshal(e)
			why += ": " + string(b)
		}
		fmt.Fprintln(stderr, "convctl chat: the reply ended", why)
		return 1
	}
	if why := refusal(context.WithoutCancel(ctx), c, conv, sent.EventID); why != "" {
		fmt.Fprintln(stderr, "convctl chat: the reply request was refused:", why)
		return 1
	}
	fmt.Fprintf(stderr, "convctl chat: no end of reply %s within %v (is an orchestrator running? make run starts one)\n", replyID, *replyTimeout)
	return 1
}

// awaitStored waits up to 5 s until the stored snapshot of conv reaches
// version.
func awaitStored(ctx context.Context, c *client.Client, conv string, version uint64) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := c.Snapshot(ctx, conv); err == nil && s.Version >= version {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// refusal returns why the request eventID was refused, as the
// conversation's errors record it; "" when it was not (yet).
func refusal(ctx context.Context, c *client.Client, conv, eventID string) string {
	errs, err := c.Errors(ctx, conv)
	if err != nil {
		return ""
	}
	for _, e := range errs {
		var rej streams.EventRejected
		if e.Event.Type() == streams.TypeEventRejected && e.Event.DataAs(&rej) == nil && rej.EventID != nil && *rej.EventID == eventID {
			return string(rej.Code) + ": " + rej.Reason
		}
	}
	return ""
}

// activeLeaf returns the id of the last message of a conversation's active
// path; "" for a new conversation.
func activeLeaf(ctx context.Context, c *client.Client, conv string) string {
	s, err := c.Snapshot(ctx, conv)
	if err != nil {
		return ""
	}
	var list []map[string]any
	if json.Unmarshal(s.FlatList, &list) != nil || len(list) == 0 {
		return ""
	}
	last := list[len(list)-1]
	// A group (an assistant that called tools) ends with its last child.
	if children, _ := last["children"].([]any); len(children) > 0 {
		if child, ok := children[len(children)-1].(map[string]any); ok {
			last = child
		}
	}
	id, _ := last["id"].(string)
	return id
}

// findEntry returns the flatList entry id (or a group's child id), read
// from the end, where a reply is.
func findEntry(list []json.RawMessage, id string) map[string]any {
	for i := len(list) - 1; i >= 0; i-- {
		if !strings.Contains(string(list[i]), `"`+id+`"`) {
			continue
		}
		var m map[string]any
		if json.Unmarshal(list[i], &m) != nil {
			return nil
		}
		if m["id"] == id {
			return withGroupCalls(m)
		}
	}
	return nil
}

// withGroupCalls returns a group entry's tools on it, as its child holds
// them.
func withGroupCalls(m map[string]any) map[string]any {
	if children, _ := m["children"].([]any); len(children) > 0 {
		if child, ok := children[0].(map[string]any); ok && child["tools"] != nil {
			m["tools"] = child["tools"]
		}
	}
	return m
}

// printCalls prints a reply's tool calls, one a line.
func printCalls(w io.Writer, m map[string]any) {
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		fmt.Fprintf(w, "[tool call %v %v.%v(%v)]\n", tm["id"], tm["identifier"], tm["apiName"], tm["arguments"])
	}
}
