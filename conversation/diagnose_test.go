package conversation

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// spec is a message of a diagnose test, in the shorthand of upstream
// doctor/__tests__/diagnose.test.ts.
type spec struct {
	id, role, parent, content, toolCallID string
	t                                     float64
	tools                                 []string
	meta                                  map[string]any
	extra                                 map[string]any // more fields
}

func build(t *testing.T, specs ...spec) []*Message {
	t.Helper()
	out := make([]*Message, len(specs))
	for i, s := range specs {
		f := map[string]any{"id": s.id, "role": s.role, "content": s.content, "createdAt": s.t, "agentId": "agt_1"}
		if s.parent != "" {
			f["parentId"] = s.parent
		}
		if s.toolCallID != "" {
			f["tool_call_id"] = s.toolCallID
		}
		if s.meta != nil {
			f["metadata"] = s.meta
		}
		if len(s.tools) > 0 {
			tools := make([]any, len(s.tools))
			for j, c := range s.tools {
				tools[j] = map[string]any{"apiName": "run", "arguments": "{}", "id": c, "identifier": "shell", "type": "builtin"}
			}
			f["tools"] = tools
		}
		for k, v := range s.extra {
			f[k] = v
		}
		m, err := NewMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m
	}
	return out
}

// renderedSet returns the ids Parse shows, at any depth.
func renderedSet(t *testing.T, msgs []*Message) map[string]bool {
	t.Helper()
	res, err := Parse(msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range res.FlatList {
		collectRenderedIDs(m, out)
	}
	return out
}

func roots(msgs []*Message) int {
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[m.ID()] = true
	}
	n := 0
	for _, m := range msgs {
		if p, _ := m.ParentID(); p == "" || !ids[p] {
			n++
		}
	}
	return n
}

func reparent(id, parent string) Repair {
	return Repair{Op: RepairReparent, MessageID: id, ParentID: parent}
}

func setIndex(id string, i int) Repair {
	return Repair{Op: RepairSetBranchIndex, MessageID: id, Index: i}
}

var signalMeta = map[string]any{"signal": map[string]any{"sourceToolCallId": "c1", "sourceToolName": "shell", "type": "tool-stdout"}}

// TestDiagnose ports upstream doctor/__tests__/diagnose.test.ts; each case
// names the upstream test it comes from.
func TestDiagnose(t *testing.T) {
	concurrentFork := []spec{
		{id: "u1", role: "user", t: 0},
		{content: "working", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
		{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
		{content: "still working", id: "a2", parent: "a1", role: "assistant", t: 30, tools: []string{"c2"}},
		{content: "out", id: "t2", parent: "a2", role: "tool", t: 40, toolCallID: "c2"},
		{content: "run finished", id: "a3", parent: "a2", role: "assistant", t: 50},
		{content: "wait, also do X", id: "u2", parent: "a1", role: "user", t: 35},
		{content: "sure", id: "b1", parent: "u2", role: "assistant", t: 45},
	}
	staleIndex := func(extra map[string]any, meta map[string]any) []spec {
		return []spec{
			{id: "u1", meta: map[string]any{"activeBranchIndex": 2}, role: "user", t: 0},
			{content: extra["content"].(string), id: "a1", parent: "u1", role: "assistant", t: 10, extra: extra, meta: meta},
			{content: extra["content"].(string), id: "a2", parent: "u1", role: "assistant", t: 100, extra: extra, meta: meta},
		}
	}
	segmentSplit := []spec{
		{content: "first question", id: "u1", role: "user", t: 0},
		{content: "first answer", id: "a1", parent: "u1", role: "assistant", t: 10},
		{content: "second question", id: "u2", role: "user", t: 100},
		{content: "second answer", id: "a2", parent: "u2", role: "assistant", t: 110},
	}
	tests := []struct {
		name  string
		specs []spec
		// more messages, given as JSON objects, before the specs
		raw []string
		// kinds of the findings; nil: healthy
		kinds []FindingKind
		// the finding's MessageID, when one is expected
		at string
		// hidden ids every finding together must include; exact: equal
		hidden      []string
		exactHidden bool
		hiddenCount int // -1: more than 0
		repairs     []Repair
		reattached  []string
		lost        []string
		// after the repairs: these ids shown, or (allShown) every one;
		// the tree has a single root (oneRoot)
		shown    []string
		allShown bool
		oneRoot  bool
		// ids that Parse must not show in the input as it is
		hiddenBefore []string
		// ids that Parse shows in the input as it is
		shownBefore []string
	}{{
		name: "reports nothing for a healthy conversation",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "hi", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{content: "done", id: "a2", parent: "a1", role: "assistant", t: 30},
			{id: "u2", parent: "a2", role: "user", t: 40},
			{content: "ok", id: "a3", parent: "u2", role: "assistant", t: 50},
		},
	}, {
		// concurrent fork: "detects the fork and hides one of the two
		// branches" and "makes every message visible again once repaired"
		name:        "concurrent fork",
		specs:       concurrentFork,
		kinds:       []FindingKind{KindConcurrentFork},
		at:          "a1",
		hidden:      []string{"u2", "b1"},
		hiddenCount: -1,
		repairs:     []Repair{reparent("u2", "a3")},
		allShown:    true,
	}, {
		// branches the user chose are left alone: "ignores a regenerated answer"
		name: "regenerated answer",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "first try", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "second try", id: "a2", parent: "u1", role: "assistant", t: 100},
		},
	}, {
		// "ignores a user branching off an earlier message after the run finished"
		name: "user branch after the run",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "working", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{content: "run finished", id: "a2", parent: "a1", role: "assistant", t: 30},
			{content: "actually, rewind", id: "u2", parent: "a1", role: "user", t: 1000},
			{content: "ok", id: "b1", parent: "u2", role: "assistant", t: 1010},
		},
	}, {
		// stale branch index: "detects every branch being dropped" and
		// "points the index back at the newest branch that exists"
		name:        "stale branch index",
		specs:       staleIndex(map[string]any{"content": "try"}, nil),
		kinds:       []FindingKind{KindStaleBranchIndex},
		at:          "u1",
		hidden:      []string{"a1", "a2"},
		hiddenCount: 2,
		repairs:     []Repair{setIndex("u1", 1)},
		shown:       []string{"a2"},
	}, {
		// "leaves an in-bounds index alone, discarded branch and all"
		name: "in-bounds index",
		specs: []spec{
			{id: "u1", meta: map[string]any{"activeBranchIndex": 1}, role: "user", t: 0},
			{content: "first try", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "second try", id: "a2", parent: "u1", role: "assistant", t: 100},
		},
		hiddenBefore: []string{"a1"},
	}, {
		// "leaves a stale index above a single child alone"
		name: "stale index above one child",
		specs: []spec{
			{id: "u1", meta: map[string]any{"activeBranchIndex": 1}, role: "user", t: 0},
			{content: "the answer", id: "a1", parent: "u1", role: "assistant", t: 10},
		},
		shownBefore: []string{"a1"},
	}, {
		// "offers a repair for a message carrying an error and no text"
		name:         "dropped error counts",
		specs:        staleIndex(map[string]any{"content": "", "error": map[string]any{"type": "PluginServerError"}}, nil),
		kinds:        []FindingKind{KindStaleBranchIndex},
		repairs:      []Repair{setIndex("u1", 1)},
		hiddenBefore: []string{"a2"},
	}, {
		// "offers a repair for a message carrying reasoning and no text"
		name:         "dropped reasoning counts",
		specs:        staleIndex(map[string]any{"content": "", "reasoning": map[string]any{"content": "thinking…"}}, nil),
		kinds:        []FindingKind{KindStaleBranchIndex},
		repairs:      []Repair{setIndex("u1", 1)},
		hiddenBefore: []string{"a2"},
	}, {
		// "stays quiet when the dropped messages carry only token usage"
		name:  "dropped usage alone is no repair",
		specs: staleIndex(map[string]any{"content": ""}, map[string]any{"usage": map[string]any{"totalTokens": 12}}),
	}, {
		// orphan signal turn: "re-anchors a callback turn the reader drops
		// onto the tool that triggered it"
		name: "orphan signal turn",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "running", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1", "c2"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{content: "the task finished, here is the summary", id: "s1", meta: signalMeta, parent: "a1", role: "assistant", t: 30},
			{content: "out", id: "t2", parent: "a1", role: "tool", t: 40, toolCallID: "c2"},
			{content: "final answer", id: "a2", parent: "a1", role: "assistant", t: 50},
		},
		kinds:       []FindingKind{KindOrphanSignalTurn},
		at:          "s1",
		hidden:      []string{"s1"},
		exactHidden: true,
		repairs:     []Repair{reparent("s1", "t1")},
		shown:       []string{"s1"},
	}, {
		// "leaves a mis-parented callback turn alone when the reader still shows it"
		name: "mis-parented signal turn still shown",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "running", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{content: "saw output", id: "s1", meta: signalMeta, parent: "a1", role: "assistant", t: 30},
		},
		shownBefore: []string{"s1"},
	}, {
		// lost content: "reports a run of empty shells as unrecoverable"
		name: "run of empty shells",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "step", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{id: "shell1", parent: "a1", role: "assistant", t: 30},
			{id: "shell2", parent: "shell1", role: "assistant", t: 40},
			{id: "shell3", parent: "shell2", role: "assistant", t: 50},
			{content: "next question", id: "u2", parent: "shell3", role: "user", t: 60},
			{content: "ok", id: "a2", parent: "u2", role: "assistant", t: 70},
		},
		kinds: []FindingKind{KindLostContent},
		at:    "shell1",
		lost:  []string{"shell1", "shell2", "shell3"},
	}, {
		// "ignores a lone turn-final shell"
		name: "lone shell",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "step", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{id: "shell1", parent: "a1", role: "assistant", t: 30},
			{content: "next question", id: "u2", parent: "shell1", role: "user", t: 60},
			{content: "ok", id: "a2", parent: "u2", role: "assistant", t: 70},
		},
	}, {
		// "never treats a message carrying token usage as a shell"
		name: "usage is not a shell",
		specs: []spec{
			{id: "u1", role: "user", t: 0},
			{content: "step", id: "a1", parent: "u1", role: "assistant", t: 10, tools: []string{"c1"}},
			{content: "out", id: "t1", parent: "a1", role: "tool", t: 20, toolCallID: "c1"},
			{id: "usageOnly1", meta: map[string]any{"usage": map[string]any{"totalTokens": 12}}, parent: "a1", role: "assistant", t: 30},
			{id: "usageOnly2", meta: map[string]any{"usage": map[string]any{"totalTokens": 34}}, parent: "usageOnly1", role: "assistant", t: 40},
			{content: "done", id: "a2", parent: "usageOnly2", role: "assistant", t: 50},
		},
	}, {
		// segment split: "reattaches the stranded section onto the tail of
		// what came before" and "collapses the tree to a single root once
		// repaired"
		name:        "segment split",
		specs:       segmentSplit,
		kinds:       []FindingKind{KindSegmentSplit},
		at:          "u2",
		exactHidden: true,
		hidden:      []string{},
		reattached:  []string{"u2", "a2"},
		repairs:     []Repair{reparent("u2", "a1")},
		oneRoot:     true,
		allShown:    true,
	}, {
		// "treats a dangling parent the same as a missing one"
		name: "dangling parent",
		specs: []spec{
			{content: "q", id: "u1", role: "user", t: 0},
			{content: "a", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "later q", id: "u2", parent: "ghost", role: "user", t: 100},
			{content: "later a", id: "a2", parent: "u2", role: "assistant", t: 110},
		},
		kinds:   []FindingKind{KindSegmentSplit},
		repairs: []Repair{reparent("u2", "a1")},
	}, {
		// "uses the last real message behind a compression group as the repair parent"
		name: "behind a compression group",
		raw:  []string{`{"content":"Earlier conversation summary","createdAt":10,"id":"mg1","lastMessageId":"a1","role":"compressedGroup","updatedAt":10}`},
		specs: []spec{
			{content: "question after reconnect", id: "u2", role: "user", t: 100},
			{content: "answer after reconnect", id: "a2", parent: "u2", role: "assistant", t: 110},
		},
		kinds:   []FindingKind{KindSegmentSplit},
		repairs: []Repair{reparent("u2", "a1")},
	}, {
		// "chains several stranded sections back in time order"
		name: "several stranded sections",
		specs: []spec{
			{content: "q1", id: "u1", role: "user", t: 0},
			{content: "a1", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "q2", id: "u2", role: "user", t: 100},
			{content: "a2", id: "a2", parent: "u2", role: "assistant", t: 110},
			{content: "q3", id: "u3", role: "user", t: 200},
			{content: "a3", id: "a3", parent: "u3", role: "assistant", t: 210},
		},
		kinds:   []FindingKind{KindSegmentSplit, KindSegmentSplit},
		repairs: []Repair{reparent("u2", "a1"), reparent("u3", "a2")},
		oneRoot: true,
	}, {
		// "leaves a parentless assistant seed for a human to look at"
		name: "parentless assistant",
		specs: []spec{
			{content: "q", id: "u1", role: "user", t: 0},
			{content: "a", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "orphan seed", id: "a2", role: "assistant", t: 100},
		},
	}, {
		// "does not touch a healthy single-root topic"
		name: "healthy single root",
		specs: []spec{
			{content: "q", id: "u1", role: "user", t: 0},
			{content: "a", id: "a1", parent: "u1", role: "assistant", t: 10},
			{content: "q2", id: "u2", parent: "a1", role: "user", t: 20},
			{content: "a2", id: "a2", parent: "u2", role: "assistant", t: 30},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []*Message
			for _, r := range tc.raw {
				msgs = append(msgs, mustMessage(t, r))
			}
			msgs = append(msgs, build(t, tc.specs...)...)
			before := renderedSet(t, msgs)
			for _, id := range tc.hiddenBefore {
				if before[id] {
					t.Fatalf("precondition: Parse shows %s", id)
				}
			}
			for _, id := range tc.shownBefore {
				if !before[id] {
					t.Fatalf("precondition: Parse does not show %s", id)
				}
			}
			d, err := Diagnose(msgs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []FindingKind
			var hidden []string
			for _, f := range d.Findings {
				kinds = append(kinds, f.Kind)
				hidden = append(hidden, f.HiddenMessageIDs...)
				if f.Explanation == "" {
					t.Errorf("finding %s without explanation", f.Kind)
				}
				if f.Repairable != (f.Repair != nil) {
					t.Errorf("finding %s: repairable %v with repair %v", f.Kind, f.Repairable, f.Repair)
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("kinds %v, want %v (%+v)", kinds, tc.kinds, d.Findings)
			}
			if d.Healthy() != (len(tc.kinds) == 0) {
				t.Errorf("Healthy() = %v", d.Healthy())
			}
			if len(tc.kinds) == 0 {
				return
			}
			f := d.Findings[0]
			if tc.at != "" && f.MessageID != tc.at {
				t.Errorf("messageId %q, want %q", f.MessageID, tc.at)
			}
			if tc.exactHidden && !slices.Equal(f.HiddenMessageIDs, tc.hidden) {
				t.Errorf("hidden %v, want %v", f.HiddenMessageIDs, tc.hidden)
			}
			for _, id := range tc.hidden {
				if !slices.Contains(hidden, id) {
					t.Errorf("hidden %v, want it to include %s", hidden, id)
				}
			}
			switch {
			case tc.hiddenCount == -1 && d.HiddenCount == 0:
				t.Errorf("hiddenCount 0, want more")
			case tc.hiddenCount > 0 && d.HiddenCount != tc.hiddenCount:
				t.Errorf("hiddenCount %d, want %d", d.HiddenCount, tc.hiddenCount)
			}
			for _, id := range tc.reattached {
				if !slices.Contains(f.ReattachedMessageIDs, id) {
					t.Errorf("reattached %v, want it to include %s", f.ReattachedMessageIDs, id)
				}
			}
			if tc.lost != nil && !slices.Equal(f.LostMessageIDs, tc.lost) {
				t.Errorf("lost %v, want %v", f.LostMessageIDs, tc.lost)
			}
			repairs := d.Repairs()
			if !reflect.DeepEqual(repairs, append([]Repair{}, tc.repairs...)) {
				t.Fatalf("repairs %+v, want %+v", repairs, tc.repairs)
			}
			if len(repairs) == 0 {
				return
			}
			fixed, err := ApplyRepairs(msgs, repairs)
			if err != nil {
				t.Fatal(err)
			}
			after := renderedSet(t, fixed)
			for _, id := range tc.shown {
				if !after[id] {
					t.Errorf("after repair, %s is not shown", id)
				}
			}
			if tc.allShown {
				for _, m := range fixed {
					if !after[m.ID()] {
						t.Errorf("after repair, %s is not shown", m.ID())
					}
				}
			}
			if tc.oneRoot && roots(fixed) != 1 {
				t.Errorf("after repair, %d roots", roots(fixed))
			}
			again, err := Diagnose(fixed, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !again.Healthy() {
				t.Errorf("after repair: %+v", again.Findings)
			}
		})
	}
}

// TestApplyRepairsLeavesInputAlone: the repaired list is new; the input
// messages keep their parent and metadata.
func TestApplyRepairsLeavesInputAlone(t *testing.T) {
	msgs := build(t,
		spec{id: "u1", role: "user", meta: map[string]any{"activeBranchIndex": 5, "keep": "me"}},
		spec{id: "a1", role: "assistant", parent: "u1"},
		spec{id: "u2", role: "user"},
	)
	fixed, err := ApplyRepairs(msgs, []Repair{setIndex("u1", 0), reparent("u2", "a1")})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := msgs[2].ParentID(); p != "" {
		t.Errorf("input changed: u2 parent %q", p)
	}
	if md, _ := msgs[0].Get("metadata"); md.(map[string]any)["activeBranchIndex"] != float64(5) {
		t.Errorf("input changed: u1 metadata %v", md)
	}
	if p, _ := fixed[2].ParentID(); p != "a1" {
		t.Errorf("u2 parent %q, want a1", p)
	}
	md, _ := fixed[0].Get("metadata")
	if want := map[string]any{"activeBranchIndex": float64(0), "keep": "me"}; !reflect.DeepEqual(md, want) {
		t.Errorf("u1 metadata %v, want %v", md, want)
	}
	if fixed[1] != msgs[1] {
		t.Errorf("an untouched message was copied")
	}
	for _, bad := range []Repair{reparent("ghost", "u1"), {Op: "delete", MessageID: "u1"}, setIndex("u1", -1)} {
		if _, err := ApplyRepairs(msgs, []Repair{bad}); !errors.Is(err, ErrInvalidRepair) {
			t.Errorf("ApplyRepairs(%+v) = %v, want ErrInvalidRepair", bad, err)
		}
	}
}

// TestRepairJSON: a repair is written with its operation's fields only, in
// the shape upstream's RepairOp has.
func TestRepairJSON(t *testing.T) {
	for _, tc := range []struct {
		r    Repair
		want string
	}{
		{reparent("u2", "a1"), `{"type":"reparent","messageId":"u2","parentId":"a1"}`},
		{setIndex("u1", 0), `{"type":"set-branch-index","messageId":"u1","index":0}`},
	} {
		got, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
		var back Repair
		if err := json.Unmarshal(got, &back); err != nil || back != tc.r {
			t.Errorf("round trip: %+v, %v", back, err)
		}
	}
}

// TestDiagnoseCorpus runs Diagnose over every conformance input (the
// robustness cases included): it answers without panicking, every id it
// names is a message of the input, its repairs apply, and the repaired
// conversation parses.
func TestDiagnoseCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/conformance/*.jsonl.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	for _, file := range files {
		kinds := map[FindingKind]int{}
		for _, c := range readCases(t, file) {
			msgs, groups, err := DecodeInputBytes(c.Input)
			if err != nil {
				continue
			}
			d, err := Diagnose(msgs, groups)
			if err != nil {
				if _, perr := Parse(msgs, groups); perr == nil {
					t.Errorf("%s: Diagnose: %v, but Parse succeeds", c.Name, err)
				}
				continue
			}
			ids := map[string]bool{}
			for _, m := range msgs {
				ids[m.ID()] = true
			}
			for _, f := range d.Findings {
				kinds[f.Kind]++
				named := slices.Concat([]string{f.MessageID}, f.HiddenMessageIDs, f.ReattachedMessageIDs, f.LostMessageIDs)
				for _, id := range named {
					if !ids[id] {
						t.Errorf("%s: finding %s names %q, not a message", c.Name, f.Kind, id)
					}
				}
			}
			fixed, err := ApplyRepairs(msgs, d.Repairs())
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			if _, err := Parse(fixed, groups); err != nil {
				t.Errorf("%s: repaired conversation: %v", c.Name, err)
			}
		}
		t.Logf("%s: findings %v", filepath.Base(file), kinds)
	}
}

// TestDiagnoseOddInput: parent cycles, repeated ids, times that are not
// numbers and thread messages are diagnosed without a panic or a hang, and
// thread messages are never named.
func TestDiagnoseOddInput(t *testing.T) {
	docs := []string{
		`[{"id":"r","role":"user","content":"q","createdAt":1},{"id":"a","role":"assistant","content":"x","parentId":"b","createdAt":2},{"id":"b","role":"user","content":"y","parentId":"a","createdAt":3}]`,
		`[{"id":"u","role":"user","content":"q","createdAt":1},{"id":"u","role":"user","content":"again","createdAt":2},{"id":"a","role":"assistant","content":"x","parentId":"u","createdAt":3}]`,
		`[{"id":"u","role":"user","content":"q","createdAt":"soon"},{"id":"u2","role":"user","content":"q2","createdAt":null},{"id":"a","role":"assistant","content":"x","parentId":"u","createdAt":{}}]`,
		`[{"id":"u","role":"user","content":"q","createdAt":1},{"id":"a","role":"assistant","content":"x","parentId":"u","createdAt":2},
		  {"id":"t1","role":"user","content":"in a thread","threadId":"th","createdAt":3},{"id":"t2","role":"assistant","content":"","threadId":"th","parentId":"t1","createdAt":4},
		  {"id":"t3","role":"assistant","content":"","threadId":"th","parentId":"t2","createdAt":5},{"id":"t4","role":"user","content":"z","threadId":"th","parentId":"t3","createdAt":6}]`,
	}
	for i, doc := range docs {
		msgs, groups, err := DecodeInputBytes([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		d, err := Diagnose(msgs, groups)
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		for _, f := range d.Findings {
			named := slices.Concat([]string{f.MessageID}, f.HiddenMessageIDs, f.ReattachedMessageIDs, f.LostMessageIDs)
			for _, id := range named {
				if strings.HasPrefix(id, "t") {
					t.Errorf("doc %d: thread message %s named by %s", i, id, f.Kind)
				}
			}
		}
		if _, err := ApplyRepairs(msgs, d.Repairs()); err != nil {
			t.Errorf("doc %d: %v", i, err)
		}
	}
}

// TestDiagnoseParentCycle: messages whose parentIds lead back to
// themselves are dropped by Parse, so the conversation is not healthy: one
// parent-cycle finding names the cycle, from its earliest message, and
// hides its messages. A message under the cycle is not a member of it.
func TestDiagnoseParentCycle(t *testing.T) {
	doc := `[{"id":"r","role":"user","content":"q","createdAt":1},
	  {"id":"a","role":"assistant","content":"x","parentId":"b","createdAt":2},
	  {"id":"b","role":"user","content":"y","parentId":"c","createdAt":3},
	  {"id":"c","role":"assistant","content":"z","parentId":"a","createdAt":4},
	  {"id":"d","role":"user","content":"under","parentId":"c","createdAt":5}]`
	msgs, groups, err := DecodeInputBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diagnose(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	if d.Healthy() {
		t.Fatal("a conversation with a parent cycle diagnosed healthy")
	}
	var cycles []Finding
	for _, f := range d.Findings {
		if f.Kind == KindParentCycle {
			cycles = append(cycles, f)
		}
	}
	if len(cycles) != 1 {
		t.Fatalf("findings %+v, want one parent cycle", d.Findings)
	}
	f := cycles[0]
	if f.MessageID != "a" || !slices.Equal(f.HiddenMessageIDs, []string{"a", "b", "c"}) || f.Repairable {
		t.Errorf("finding %+v", f)
	}
	t.Log(f.Explanation)
}
