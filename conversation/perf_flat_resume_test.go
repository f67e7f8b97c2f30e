package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
)

// resumeCheck compares a conversation's flat list with Parse's after each
// change, byte for byte, and checks that a flat list handed out earlier
// never changes under its holder.
type resumeCheck struct {
	t       *testing.T
	resumed int // flat lists brought up to date by a resumed walk
	held    []*Message
	heldAt  []*Message // a copy of held's entries when it was handed out
}

func (rc *resumeCheck) check(name string, step int, conv *Conversation) {
	rc.t.Helper()
	if !conv.current && conv.walk != nil && conv.resumeAt > 1 {
		rc.resumed++
	}
	flat, err := conv.FlatList()
	if err != nil {
		rc.t.Fatal(err)
	}
	want, err := Parse(conv.Messages(), conv.Groups())
	if err != nil {
		rc.t.Fatal(err)
	}
	got, err := json.Marshal(flat)
	if err != nil {
		rc.t.Fatal(err)
	}
	exp, err := json.Marshal(want.FlatList)
	if err != nil {
		rc.t.Fatal(err)
	}
	if !bytes.Equal(got, exp) {
		rc.t.Fatalf("%s step %d: flatList: %s", name, step, jsondiff.Diff(flatJSON(rc.t, want.FlatList), flatJSON(rc.t, flat)))
	}
	if !slices.Equal(rc.held, rc.heldAt) {
		rc.t.Fatalf("%s step %d: a flat list handed out earlier changed", name, step)
	}
	rc.held, rc.heldAt = flat, slices.Clone(flat)
}

// convGen appends random messages to a conversation, most of them at the
// tail of what was appended last, as a live conversation grows: user turns,
// assistant replies, tool calls and their results (anchored on the
// assistant or on the result), consecutive assistant steps, sub-agent and
// supervisor replies, signal callbacks, task fans, councils, compare
// columns, branches and orphans.
type convGen struct {
	rng   *rand.Rand
	conv  *Conversation
	ids   []string
	last  string
	calls map[string][]string // assistant id → its tool call ids without a result yet
	n     int
	at    float64
}

func (g *convGen) parent() any {
	switch r := g.rng.IntN(100); {
	case len(g.ids) == 0 || r < 3:
		return nil
	case r < 5:
		return "missing-" + fmt.Sprint(g.rng.IntN(3))
	case r < 20:
		return g.ids[g.rng.IntN(len(g.ids))]
	case r < 28:
		return g.ids[max(0, len(g.ids)-1-g.rng.IntN(4))]
	}
	return g.last
}

func (g *convGen) next() *Message {
	g.n++
	id := fmt.Sprintf("g%d", g.n)
	g.at += float64(g.rng.IntN(3)) // ties now and then
	f := map[string]any{"id": id, "content": fmt.Sprintf("c%d", g.n), "createdAt": g.at, "parentId": g.parent()}
	meta := map[string]any{}
	p, _ := f["parentId"].(string)
	switch r := g.rng.IntN(100); {
	case r < 30:
		f["role"] = "user"
	case r < 55:
		f["role"] = "assistant"
	case r < 68:
		f["role"] = "assistant"
		var tools []any
		for k := range 1 + g.rng.IntN(2) {
			call := fmt.Sprintf("call-%d-%d", g.n, k)
			t := map[string]any{"id": call, "type": "default", "apiName": "x"}
			if g.rng.IntN(4) == 0 {
				t["result_msg_id"] = fmt.Sprintf("g%d", g.n+1+k)
			}
			tools = append(tools, t)
			g.calls[id] = append(g.calls[id], call)
		}
		f["tools"] = tools
	case r < 82:
		f["role"] = "tool"
		for _, a := range g.ids {
			// In append order, so that a seed makes one conversation.
			if calls := g.calls[a]; len(calls) > 0 && (a == p || g.rng.IntN(3) == 0) {
				f["parentId"] = a
				f["tool_call_id"] = calls[0]
				g.calls[a] = calls[1:]
				break
			}
		}
		if g.rng.IntN(10) == 0 {
			meta["agentCouncil"] = true
		}
	case r < 87:
		f["role"] = "task"
		f["agentId"] = []string{"a1", "a2"}[g.rng.IntN(2)]
	case r < 90:
		f["role"] = "assistant"
		meta["signal"] = map[string]any{"type": []string{"tool-callback", "tool-stdout", "task-completion"}[g.rng.IntN(3)], "sequence": float64(g.rng.IntN(3))}
	case r < 93:
		f["role"] = "assistant"
		if g.rng.IntN(2) == 0 {
			meta["isSupervisor"] = true
		} else {
			meta["orchestrationRole"] = "supervisor"
		}
	case r < 96:
		f["role"] = "assistant"
		f["agentId"] = "sub"
	default:
		f["role"] = "user"
		meta["compare"] = true
	}
	switch r := g.rng.IntN(40); {
	case r == 0:
		meta["activeBranchIndex"] = float64(g.rng.IntN(3))
	case r == 1:
		meta["activeColumn"] = true
	case r == 2:
		f["groupId"] = "cmp"
	case r == 3:
		meta["usage"] = map[string]any{"totalTokens": float64(g.n)}
	}
	if len(meta) > 0 {
		f["metadata"] = meta
	}
	return MustMessage(f)
}

func (g *convGen) append(t *testing.T, m *Message) bool {
	t.Helper()
	if err := g.conv.Append(m); err != nil {
		return false
	}
	g.ids = append(g.ids, m.ID())
	g.last = m.ID()
	return true
}

// TestResumeMatchesParse grows random conversations one message at a time
// and compares the flat list with a full Parse after every append, with
// branch switches, edits, deletes and group changes mixed in.
func TestResumeMatchesParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rc := &resumeCheck{t: t}
	convs, size := 400, 80
	if testing.Short() {
		convs = 80
	}
	for c := range convs {
		g := &convGen{rng: rng, conv: NewConversation(), calls: map[string][]string{}, at: 1000}
		name := fmt.Sprintf("conv %d", c)
		if c%4 != 0 {
			// Every rewind within reach, however far back.
			g.conv.journalSteps = 1 << 20
			name += " (long journal)"
		}
		if c%5 == 0 {
			grp, err := NewMessageGroup(map[string]any{"id": "cmp", "mode": "compare"})
			if err != nil {
				t.Fatal(err)
			}
			_ = g.conv.UpsertGroup(grp)
		}
		for step := range size {
			if !g.append(t, g.next()) {
				continue
			}
			switch r := rng.IntN(60); {
			case r == 0:
				target := g.ids[rng.IntN(len(g.ids))]
				_ = g.conv.Update(target, map[string]any{"metadata": map[string]any{"activeBranchIndex": float64(rng.IntN(3))}})
			case r == 1:
				_ = g.conv.Update(g.ids[rng.IntN(len(g.ids))], map[string]any{"content": "edited"})
			case r == 2 && len(g.ids) > 2:
				i := rng.IntN(len(g.ids))
				_ = g.conv.Delete(g.ids[i])
				g.ids = slices.Delete(g.ids, i, i+1)
			case r == 3:
				// Two appends between reads.
				g.append(t, g.next())
			}
			rc.check(name, step, g.conv)
		}
	}
	if rc.resumed == 0 {
		t.Fatal("no flat list came from a resumed walk")
	}
	t.Logf("%d flat lists from a resumed walk", rc.resumed)
}

// TestResumeCorpusTail appends the corpus conversations one message at a
// time, then grows each at the end of its active path with user turns,
// assistant replies and tool runs, comparing with Parse after every append.
func TestResumeCorpusTail(t *testing.T) {
	rc := &resumeCheck{t: t}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, file := range []string{"generated-normal", "generated-noise", "reference-suite"} {
		cases := readCases(t, filepath.Join("testdata", "conformance", file+".jsonl.gz"))
		for i, c := range cases {
			if i%4 != 1 || (testing.Short() && i%12 != 1) {
				continue
			}
			msgs, groups, err := DecodeInputBytes(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			conv := NewConversation()
			for _, gr := range groups {
				_ = conv.UpsertGroup(gr)
			}
			for step, m := range msgs {
				if conv.Append(m) == nil {
					rc.check(c.Name, step, conv)
				}
			}
			flat, err := conv.FlatList()
			if err != nil || len(flat) == 0 {
				continue
			}
			g := &convGen{rng: rng, conv: conv, calls: map[string][]string{}, at: 1e13}
			for _, m := range conv.Messages() {
				g.ids = append(g.ids, m.ID())
			}
			g.last = flat[len(flat)-1].ID()
			if _, ok := conv.Get(g.last); !ok {
				g.last = g.ids[len(g.ids)-1]
			}
			for step := range 30 {
				if g.append(t, g.next()) {
					rc.check(c.Name+" tail", step, conv)
				}
			}
		}
	}
	if rc.resumed == 0 {
		t.Fatal("no flat list came from a resumed walk")
	}
	t.Logf("%d flat lists from a resumed walk", rc.resumed)
}

// TestResumeChain checks the worker's pattern: a long user/assistant chain
// grown at the tail resumes every time, a few steps from the end.
func TestResumeChain(t *testing.T) {
	rc := &resumeCheck{t: t}
	conv := NewConversation()
	conv.smallWalk = 0 // resume from the third message on
	for k := range 300 {
		if err := conv.Append(chainMessage(k)); err != nil {
			t.Fatal(err)
		}
		if k > 1 && (conv.current || conv.walk == nil || conv.resumeAt <= 1) {
			t.Fatalf("append %d: the walk does not resume", k)
		}
		if k > 1 {
			from := conv.walk.step - (conv.resumeAt - 1)
			if from > 4 {
				t.Fatalf("append %d: resumes %d steps from the end", k, from)
			}
		}
		rc.check("chain", k, conv)
	}
}

// FuzzConversationAppend appends the messages of an arbitrary document one
// at a time, reading the flat list after each (and now and then the context
// tree), and compares it with Parse of the same messages byte for byte:
// resumed walks, kept lists and full walks must all agree with it. Inputs
// of even length keep the index of small conversations too (smallWalk 0).
func FuzzConversationAppend(f *testing.F) {
	f.Add([]byte(`[{"id":"u","role":"user"},{"id":"a","role":"assistant","parentId":"u","tools":[{"id":"c"}]},{"id":"t","role":"tool","parentId":"a","tool_call_id":"c"},{"id":"b","role":"assistant","parentId":"t"},{"id":"v","role":"user","parentId":"b"}]`))
	f.Add([]byte(`[{"id":"u","role":"user"},{"id":"a","role":"assistant","parentId":"u"},{"id":"b","role":"assistant","parentId":"a"},{"id":"c","role":"assistant","parentId":"b","tools":[{"id":"x"}]}]`))
	f.Add([]byte(`[{"id":"u","role":"user"},{"id":"t1","role":"task","parentId":"u"},{"id":"t2","role":"task","parentId":"u"},{"id":"s","role":"assistant","parentId":"t2"}]`))
	addConformanceSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, groups, err := DecodeInputBytes(data)
		if err != nil || len(msgs) > 200 {
			return
		}
		conv := NewConversation()
		if len(data)%2 == 0 {
			conv.smallWalk = 0
		}
		for _, g := range groups {
			_ = conv.UpsertGroup(g)
		}
		for i, m := range msgs {
			if conv.Append(m) != nil {
				continue
			}
			if i%7 == 6 {
				conv.Compact() // as a cache does between quiet spells
			}
			want, werr := Parse(conv.Messages(), conv.Groups())
			if werr != nil {
				want = &Result{} // compared only when both succeed
			}
			if i%3 == 1 { // as a worker's store does
				tree, err := conv.ContextTree()
				if !sameAsParse(t, m.ID(), "ContextTree", tree, err, want.ContextTree, werr) {
					return
				}
			}
			flat, err := conv.FlatList()
			if !sameAsParse(t, m.ID(), "FlatList", flat, err, want.FlatList, werr) {
				return
			}
		}
	})
}

// sameAsParse fails t unless a view of the conversation (got, or its error
// err) is Parse's (want, or werr) after the message of the given id: both
// failed, or both encode to the same JSON. It reports whether both
// succeeded.
func sameAsParse(t *testing.T, after, view string, got any, err error, want any, werr error) bool {
	t.Helper()
	if (err != nil) != (werr != nil) {
		t.Fatalf("%s error %v, Parse error %v", view, err, werr)
	}
	if err != nil {
		return false
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("after %s: %s %s, Parse %s", after, view, g, w)
	}
	return true
}
