package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/jsvalue"
	"github.com/convstream/convstream/streams"
)

// DefaultReplyIdleTimeout is how long a streaming reply may go without a
// chunk before the worker completes it as interrupted, unless
// WithReplyIdleTimeout says otherwise.
const DefaultReplyIdleTimeout = 15 * time.Second

// WithReplyIdleTimeout sets how long a streaming reply may go without a
// chunk before the worker completes it as interrupted (with what was
// written): a reply whose writer died does not stay streaming. 0 means
// DefaultReplyIdleTimeout.
func WithReplyIdleTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.replyIdle = d
		}
	}
}

// liveReply is a message being written (streamStatus streaming) as a
// conversation's state holds it. The text its chunks add is kept here, not
// in the conversation's message, whose JSON would be written again for
// every chunk: applying a chunk costs the chunk. The message's content is
// the conversation's plus content, its reasoning.content the
// conversation's plus reasoning; the snapshot store splices them in
// (liveEntries), and the completion, which carries the whole final
// message, replaces both.
type liveReply struct {
	seq                uint64 // the last chunk applied
	content, reasoning []byte
	// entry is where the message was last found in the published flat
	// list (-1: not yet looked for).
	entry int
	// last is when the reply last changed, for the idle timeout.
	last time.Time
}

// liveReplies are a conversation's replies being written, by message id.
type liveReplies map[string]*liveReply

// startReply records message m (or data, an append's) when it is a reply
// being written.
func (l *liveReplies) startReply(id string, m *conversation.Message, data map[string]any) {
	var status any
	if m != nil {
		status, _ = m.Get(streams.FieldStreamStatus)
	} else {
		status = data[streams.FieldStreamStatus]
	}
	if status != streams.StreamStreaming {
		return
	}
	if *l == nil {
		*l = liveReplies{}
	}
	(*l)[id] = &liveReply{entry: -1, last: time.Now()}
}

// end forgets message id's reply.
func (l liveReplies) end(id string) {
	if l != nil {
		delete(l, id)
	}
}

// applyChunk applies a chunk's data to its message's reply. Text and
// reasoning are appended to the reply; tool calls change the message
// itself (with the reply's text folded in first), an O(message) step that
// tool calls, small and few, can afford.
func applyChunk(conv *conversation.Conversation, live liveReplies, data map[string]any) error {
	id, _ := data["id"].(string)
	r := live[id]
	if r == nil {
		return streams.RejectAt(streams.CodeNotStreaming, "data.id", "message %q is not streaming", id)
	}
	seq, ok := wholeNumber(data["seq"])
	if !ok || seq != int64(r.seq+1) {
		return streams.RejectAt(streams.CodeChunkOutOfOrder, "data.seq", "chunk %v of message %q: want %d", data["seq"], id, r.seq+1)
	}
	text, ok1 := optString(data, "text")
	reasoning, ok2 := optString(data, "reasoning")
	if !ok1 || !ok2 {
		return streams.Reject(streams.CodeBadData, "data.text and data.reasoning must be strings")
	}
	if calls, ok := data["toolCalls"]; ok {
		list, ok := calls.([]any)
		if !ok {
			return streams.RejectAt(streams.CodeBadData, "data.toolCalls", "must be an array")
		}
		if err := applyToolCalls(conv, id, r, list); err != nil {
			return err
		}
	}
	r.content = append(r.content, text...)
	r.reasoning = append(r.reasoning, reasoning...)
	r.seq++
	r.last = time.Now()
	return nil
}

// optString returns data[k] when it is a string or absent.
func optString(data map[string]any, k string) (string, bool) {
	v, ok := data[k]
	if !ok {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

// fold moves the reply's text into the conversation's message.
func fold(conv *conversation.Conversation, id string, r *liveReply) error {
	if len(r.content) == 0 && len(r.reasoning) == 0 {
		return nil
	}
	m, ok := conv.Get(id)
	if !ok {
		return streams.RejectAt(streams.CodeNotStreaming, "data.id", "message %q is gone", id)
	}
	patch := map[string]any{}
	if len(r.content) > 0 {
		c, _ := m.Get("content")
		s, _ := c.(string)
		patch["content"] = s + string(r.content)
	}
	if len(r.reasoning) > 0 {
		rv, _ := m.Get("reasoning")
		ro, _ := rv.(map[string]any)
		s, _ := ro["content"].(string)
		patch["reasoning"] = map[string]any{"content": s + string(r.reasoning)}
	}
	if err := conv.Update(id, patch); err != nil {
		return streams.RejectionOf(err)
	}
	r.content, r.reasoning = r.content[:0], r.reasoning[:0]
	return nil
}

// applyToolCalls adds a chunk's tool-call pieces to message id's tools.
func applyToolCalls(conv *conversation.Conversation, id string, r *liveReply, calls []any) error {
	if err := fold(conv, id, r); err != nil {
		return err
	}
	m, ok := conv.Get(id)
	if !ok {
		return streams.RejectAt(streams.CodeNotStreaming, "data.id", "message %q is gone", id)
	}
	tv, _ := m.Get("tools")
	have, _ := tv.([]any)
	tools := slices.Clone(have)
	for i, c := range calls {
		call, ok := c.(map[string]any)
		idx, okIdx := wholeNumber(call["index"])
		if !ok || !okIdx || idx < 0 || int(idx) > len(tools) {
			return streams.RejectAt(streams.CodeBadData, "data.toolCalls["+strconv.Itoa(i)+"].index", "must name an existing tool call or the next")
		}
		k := int(idx)
		if k == len(tools) {
			tools = append(tools, map[string]any{"arguments": ""})
		}
		t, _ := tools[k].(map[string]any)
		t = mapsClone(t)
		for _, f := range []string{"id", "identifier", "apiName", "type"} {
			if s, ok := call[f].(string); ok && s != "" {
				t[f] = s
			}
		}
		if s, ok := call["arguments"].(string); ok {
			prev, _ := t["arguments"].(string)
			t["arguments"] = prev + s
		}
		tools[k] = t
	}
	if err := conv.Update(id, map[string]any{"tools": tools}); err != nil {
		return streams.RejectionOf(err)
	}
	return nil
}

// wholeNumber returns v, a decoded JSON or msgpack number, as an integer.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), n == float64(int64(n))
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n < 1<<63
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func mapsClone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// applyCompleted ends message id's reply: the completion's fields become
// the message's (MessageCompleted.Patch), the whole content included.
func applyCompleted(conv *conversation.Conversation, live liveReplies, data map[string]any) error {
	id, _ := data["id"].(string)
	if live[id] == nil {
		return streams.RejectAt(streams.CodeNotStreaming, "data.id", "message %q is not streaming", id)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return streams.RejectErr(streams.CodeBadData, err)
	}
	var c streams.MessageCompleted
	if err := json.Unmarshal(raw, &c); err != nil {
		return streams.RejectErr(streams.CodeBadData, err)
	}
	if !slices.Contains(streams.EndStatuses, c.Status) {
		return streams.RejectAt(streams.CodeBadData, "data.status", "must be one of %v", streams.EndStatuses)
	}
	if _, ok := data["content"].(string); !ok {
		return streams.RejectAt(streams.CodeBadData, "data.content", "must be the message's whole content, a string")
	}
	patch := c.Patch()
	if _, ok := data["reasoning"]; !ok {
		// Reasoning streamed but not repeated: keep what was written.
		if r := live[id]; len(r.reasoning) > 0 {
			if err := fold(conv, id, &liveReply{reasoning: r.reasoning}); err != nil {
				return err
			}
		}
	}
	if err := conv.Update(id, patch); err != nil {
		return streams.RejectionOf(err)
	}
	live.end(id)
	return nil
}

// publishChunk publishes the delta of a chunk applied to d.state: the new
// text of its message's entry when the entry is the message itself, else
// (the message sits in a grouped entry, or the chunk changed the message
// itself) the reply's text folded into the message and an ordinary delta.
func (w *Worker) publishChunk(ctx context.Context, d *delivery) error {
	st := d.state
	id, _ := d.data["id"].(string)
	r := st.live[id]
	if r == nil {
		return w.publishFlat(ctx, d)
	}
	_, tools := d.data["toolCalls"]
	i := liveEntry(st.flat, id, r)
	if tools || i < 0 {
		if err := fold(st.conv, id, r); err != nil {
			return err
		}
		return w.publishFlat(ctx, d)
	}
	text, _ := d.data["text"].(string)
	reasoning, _ := d.data["reasoning"].(string)
	var adds []streams.TextAppend
	if text != "" {
		adds = append(adds, streams.TextAppend{Index: i, ID: id, Field: streams.AppendContent, Text: text})
	}
	if reasoning != "" {
		adds = append(adds, streams.TextAppend{Index: i, ID: id, Field: streams.AppendReasoning, Text: reasoning})
	}
	flatBytes := int(st.flatBytes) + len(text) + len(reasoning)
	if err := w.snapshots.checkSnapshotLimits(st, d, flatBytes); err != nil {
		return err
	}
	version := d.seq
	n := len(st.flat)
	size := 160 + len(st.id) + len(id) + 2*(len(text)+len(reasoning))
	msg := appendMsg(ctx, &d.lane.delta, w.cfg.subjects.Snapshots(st.id), w.cfg.source, deltaID(st.id, version), st.id,
		size, func(b []byte) []byte { return encodeAppendDelta(b, version, st.version, n, adds) })
	if err := w.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("worker: publish snapshot delta: %w", err)
	}
	st.version, st.seq, st.flatBytes = version, d.seq, int32(flatBytes)
	st.events++
	st.sinceCheckpoint.add(d.size)
	d.lane.cache.Resize(st)
	d.dirty = false
	d.version = version
	d.outcome = applied
	d.unstored = true
	return nil
}

// liveEntry returns the index of message id's own entry in flat, or -1
// when it has none (it sits in a grouped entry).
func liveEntry(flat []*conversation.Message, id string, r *liveReply) int {
	if r.entry >= 0 && r.entry < len(flat) && !flat[r.entry].Derived() && flat[r.entry].ID() == id {
		return r.entry
	}
	r.entry = -1
	for i := len(flat) - 1; i >= 0; i-- {
		if !flat[i].Derived() && flat[i].ID() == id {
			r.entry = i
			break
		}
	}
	return r.entry
}

// encodeAppendDelta appends the SnapshotDelta object of a chunk: its
// version, base, the list's length and the appends, no more. The
// conversation is the subject's, the sequence the version, and a delta
// carries the rest of a full one's fields for every chunk of every reply
// (BenchmarkLiveReply's wire-B/delta).
func encodeAppendDelta(b []byte, version, base uint64, length int, adds []streams.TextAppend) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendUint(b, version, 10)
	b = append(b, `,"baseVersion":`...)
	b = strconv.AppendUint(b, base, 10)
	b = append(b, `,"length":`...)
	b = strconv.AppendInt(b, int64(length), 10)
	b = append(b, `,"append":[`...)
	for k, a := range adds {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"i":`...)
		b = strconv.AppendInt(b, int64(a.Index), 10)
		b = append(b, `,"id":`...)
		b = jsvalue.AppendJSONString(b, a.ID)
		b = append(b, `,"f":"`...)
		b = append(b, a.Field...)
		b = append(b, `","t":`...)
		b = jsvalue.AppendJSONString(b, a.Text)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// liveEntries returns the JSON of the flat list's entries for a snapshot:
// those of messages being written with their replies' text spliced in.
func liveEntries(st *convState, entries func(yield func([]byte) bool)) func(yield func([]byte) bool) {
	if len(st.live) == 0 {
		return entries
	}
	return func(yield func([]byte) bool) {
		i := 0
		for raw := range entries {
			if m := st.flat[i]; !m.Derived() {
				if r := st.live[m.ID()]; r != nil && (len(r.content) > 0 || len(r.reasoning) > 0) {
					raw = spliceReply(raw, m.ID(), r)
				}
			}
			i++
			if !yield(raw) {
				return
			}
		}
	}
}

// spliceReply returns a message's entry with its reply's text added.
func spliceReply(raw []byte, id string, r *liveReply) []byte {
	out := raw
	if len(r.content) > 0 {
		if b, ok := streams.AppendToEntry(out, streams.TextAppend{ID: id, Field: streams.AppendContent, Text: string(r.content)}); ok {
			out = b
		}
	}
	if len(r.reasoning) > 0 {
		if b, ok := streams.AppendToEntry(out, streams.TextAppend{ID: id, Field: streams.AppendReasoning, Text: string(r.reasoning)}); ok {
			out = b
		}
	}
	return out
}

// purgeChunks removes the conversation's chunks stored before seq, that of
// a completion just applied: the events stream keeps replies, not chunks.
// Chunks its consumer has not acknowledged yet are purged once it has
// (consumer_purges.go). A failure is logged; the next completion's purge
// covers them.
func (w *Worker) purgeChunks(ctx context.Context, id string, seq uint64) {
	subject := w.cfg.subjects.StoredChunks(id, w.partitions())
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := w.purges.Load().purge(ctx, id, subject, seq); err != nil {
			w.cfg.logger.WarnContext(ctx, "reply chunks not purged", "conversation", id, "before", seq, "err", err)
		}
	}()
}

// replyWatch knows the conversations with replies being written, for the
// idle timeout.
type replyWatch struct {
	mu    sync.Mutex
	convs map[string]*lane
}

// touch records that conversation id, on lane l, has a reply being
// written.
func (rw *replyWatch) touch(id string, l *lane) {
	rw.mu.Lock()
	if rw.convs == nil {
		rw.convs = map[string]*lane{}
	}
	rw.convs[id] = l
	rw.mu.Unlock()
}

// snapshot returns the conversations watched.
func (rw *replyWatch) snapshot() map[string]*lane {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	out := make(map[string]*lane, len(rw.convs))
	for k, v := range rw.convs {
		out[k] = v
	}
	return out
}

func (rw *replyWatch) forget(id string) {
	rw.mu.Lock()
	delete(rw.convs, id)
	rw.mu.Unlock()
}

// watchReplies completes, as interrupted, the replies that went without a
// chunk for the idle timeout, until ctx ends; the returned func stops it.
// Those of conversations no lane holds are swept from the stream every
// half timeout (sweepOrphanReplies).
func (w *Worker) watchReplies(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	idle := w.cfg.replyIdle
	tick := max(idle/4, 50*time.Millisecond)
	go func() {
		t := time.NewTicker(max(idle/2, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			w.sweepOrphanReplies(ctx, idle)
		}
	}()
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for id, l := range w.replies.snapshot() {
				_ = w.lanes.do(ctx, l, func() {
					var ends []streams.MessageCompleted
					st := l.cache.Peek(id)
					// A partition's new owner times its replies out,
					// not this worker.
					if st == nil || len(st.live) == 0 || st.leaving || !w.owned.owns(id) {
						w.replies.forget(id)
						return
					}
					for mid, r := range st.live {
						if time.Since(r.last) < idle {
							continue
						}
						r.last = time.Now() // one completion per timeout
						ends = append(ends, interrupted(st.conv, mid, r))
					}
					if len(ends) > 0 {
						// Off the lane: the publish waits for the stream.
						go func() {
							if w.writerActive(ctx, id, idle) {
								return
							}
							for _, c := range ends {
								w.publishCompletion(ctx, id, c)
							}
						}()
					}
				})
			}
		}
	}()
	return cancel
}

// writerActive tells whether conversation conv's replies had a chunk
// stored within idle: the idle timer counts from the last chunk this
// worker applied, and a lane held up (a slow store on a busy machine) or a
// backlog leaves chunks the writer sent in time waiting behind it, which
// must not end their reply (TestLiveReplyIdleInterrupted, the TypeScript
// live test under contention). A stream that cannot be read counts as
// active: the next tick asks again.
func (w *Worker) writerActive(ctx context.Context, conv string, idle time.Duration) bool {
	last, err := w.stream.GetLastMsgForSubject(ctx, w.cfg.subjects.StoredChunks(conv, w.partitions()))
	if err != nil {
		return !errors.Is(err, jetstream.ErrMsgNotFound)
	}
	return time.Since(last.Time) < idle
}

// interrupted is the completion of message id's reply as interrupted, with
// what was written.
func interrupted(conv *conversation.Conversation, id string, r *liveReply) streams.MessageCompleted {
	c := streams.MessageCompleted{ID: id, Status: streams.StreamInterrupted,
		Error: &streams.MessageError{Type: "ReplyInterrupted", Message: "no chunk within the reply idle timeout"}}
	if m, ok := conv.Get(id); ok {
		v, _ := m.Get("content")
		s, _ := v.(string)
		c.Content = s + string(r.content)
		if len(r.reasoning) > 0 {
			rv, _ := m.Get("reasoning")
			ro, _ := rv.(map[string]any)
			prev, _ := ro["content"].(string)
			c.Reasoning = map[string]any{"content": prev + string(r.reasoning)}
		}
	}
	return c
}

// publishCompletion stores a completion the worker writes itself.
func (w *Worker) publishCompletion(ctx context.Context, conv string, c streams.MessageCompleted) {
	ev, err := streams.NewEventAs("interrupted:"+conv+":"+c.ID, streams.TypeMessageCompleted, w.cfg.source, conv, streams.ContentTypeJSON, c)
	if err == nil {
		m, encErr := streams.EncodeEvent(w.cfg.subjects.Events(conv), ev, streams.Structured)
		if encErr == nil {
			_, err = w.js.PublishMsg(ctx, m)
		} else {
			err = encErr
		}
	}
	if err != nil {
		w.cfg.logger.WarnContext(ctx, "idle reply not completed", "conversation", conv, "message", c.ID, "err", err)
		return
	}
	w.cfg.logger.InfoContext(ctx, "idle reply completed as interrupted", "conversation", conv, "message", c.ID)
}
