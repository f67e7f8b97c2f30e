package orchestrator

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
)

// toolNameSeparator joins a tool's identifier, API name and type in the
// function name a model calls (processors.ToolNameResolver).
const toolNameSeparator = "____"

// writer sends what a model writes as the reply's chunks. Deltas that
// arrive while a chunk is being stored go out together in the next one:
// the reply never waits for the store, and a fast model makes fewer,
// larger chunks. It keeps the whole reply for the completion.
type writer struct {
	send func(ctx context.Context, c streams.MessageChunk) error

	mu sync.Mutex
	// pending is the next chunk, its text and reasoning in builders: while
	// a store is slow they grow by many deltas, each appended once.
	pending                     streams.MessageChunk
	pendingText, pendingReasons strings.Builder
	has                         bool
	err                         error // the first failed send
	closed                      bool

	// The whole reply.
	text, reasoning strings.Builder
	tools           []map[string]any

	// keepalive: with nothing to send for this long, an empty chunk
	// goes out (0: never).
	keepalive time.Duration

	wake chan struct{}
	done chan struct{}
}

func newWriter(ctx context.Context, id string, keepalive time.Duration, send func(context.Context, streams.MessageChunk) error, failed func(error)) *writer {
	w := &writer{send: send, keepalive: keepalive, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.pending.ID = id
	go w.loop(ctx, failed)
	return w
}

// add takes a delta (the model's emit).
func (w *writer) add(d models.Delta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.text.WriteString(d.Text)
	w.reasoning.WriteString(d.Reasoning)
	w.pendingText.WriteString(d.Text)
	w.pendingReasons.WriteString(d.Reasoning)
	for _, tc := range d.ToolCalls {
		piece := streams.ToolCallChunk{Index: tc.Index, ID: tc.ID, Arguments: tc.Arguments}
		for len(w.tools) <= tc.Index {
			w.tools = append(w.tools, map[string]any{"id": "", "identifier": "", "apiName": "", "type": "default", "arguments": ""})
		}
		t := w.tools[tc.Index]
		if tc.ID != "" {
			t["id"] = tc.ID
		}
		if tc.Name != "" {
			id, api, typ := splitToolName(tc.Name)
			t["identifier"], t["apiName"], t["type"] = id, api, typ
			piece.Identifier, piece.APIName, piece.Type = id, api, typ
		}
		t["arguments"] = t["arguments"].(string) + tc.Arguments
		w.pending.ToolCalls = append(w.pending.ToolCalls, piece)
	}
	w.has = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// loop sends the pending chunk whenever there is one, until close.
func (w *writer) loop(ctx context.Context, failed func(error)) {
	defer close(w.done)
	var seq uint64
	for {
		w.mu.Lock()
		c, has, closed := w.pending, w.has, w.closed
		c.Text, c.Reasoning = w.pendingText.String(), w.pendingReasons.String()
		w.pending = streams.MessageChunk{ID: c.ID}
		w.pendingText.Reset()
		w.pendingReasons.Reset()
		w.has = false
		w.mu.Unlock()
		if has {
			seq++
			c.Seq = seq
			if err := w.send(ctx, c); err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				failed(err)
				return
			}
			continue
		}
		if closed {
			return
		}
		w.wait()
	}
}

// wait returns once there is something to send or to do, or, after
// keepalive with nothing, with an empty chunk pending: the workers end a
// reply silent for their idle timeout as interrupted, and a model may
// think (or a provider ask to retry) for longer than that before its
// first token.
func (w *writer) wait() {
	if w.keepalive <= 0 {
		<-w.wake
		return
	}
	t := time.NewTimer(w.keepalive)
	defer t.Stop()
	select {
	case <-w.wake:
	case <-t.C:
		w.mu.Lock()
		w.has = true
		w.mu.Unlock()
	}
}

// close sends what is pending and returns the first send's error.
func (w *writer) close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// splitToolName returns the identifier, API name and type of a function
// name: IDENTIFIER____API[____TYPE], as the pipeline names tools; a plain
// name is its own identifier and API name.
func splitToolName(name string) (identifier, apiName, typ string) {
	parts := strings.Split(name, toolNameSeparator)
	switch len(parts) {
	case 1:
		return name, name, "default"
	case 2:
		return parts[0], parts[1], "default"
	}
	return parts[0], parts[1], parts[2]
}
