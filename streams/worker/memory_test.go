package worker

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/testcorpus"
)

// TestCachedMessageMemory measures the memory a worker holds per cached
// message — the live conversation (messages, index, flat list) plus the
// flat list's JSON kept from the deltas — against the message's own JSON
// size, over the benchmark conversations. Issue 6's target is at most 3x,
// which the test requires; the ratios are logged (go test -run
// TestCachedMessageMemory -v ./streams).
func TestCachedMessageMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the large benchmark conversations")
	}
	for _, name := range []string{"conversation-1716", "deep-26085", "flat-10000"} {
		raws := benchMessages(t, name)
		jsonBytes := 0
		for _, r := range raws {
			jsonBytes += len(r)
		}
		before := heapInUse()
		conv := conversation.NewConversation(conversation.WithMaxMessages(1 << 20))
		for _, r := range raws {
			var fields map[string]any
			if err := json.Unmarshal(r, &fields); err != nil {
				t.Fatal(err)
			}
			m, err := conversation.NewMessage(fields)
			if err != nil {
				t.Fatal(err)
			}
			if err := conv.Append(m); err != nil {
				t.Fatal(err)
			}
		}
		flat, err := conv.FlatList()
		if err != nil {
			t.Fatal(err)
		}
		convOnly := heapInUse()
		st := heldState(t, conv, flat)
		after := heapInUse()
		runtime.KeepAlive(st)
		per := float64(after-before) / float64(len(raws))
		ratio := float64(after-before) / float64(jsonBytes)
		t.Logf("%s: %d messages, %.0f bytes of JSON each, %.0f bytes held each: %.2fx (the conversation %.2fx, the flat list's JSON %.2fx of %d entries); estimated %.2fx what it holds",
			name, len(raws), float64(jsonBytes)/float64(len(raws)), per, ratio,
			float64(convOnly-before)/float64(jsonBytes), float64(after-convOnly)/float64(jsonBytes), len(flat),
			float64(st.weight())/float64(after-before))
		if ratio > 3 {
			t.Errorf("%s: %.2fx the JSON size held per cached message", name, ratio)
		}
		if st.weight() < after-before {
			t.Errorf("%s: estimated at %d bytes, holding %d", name, st.weight(), after-before)
		}
	}
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// benchMessages returns the messages of a benchmark conversation, each as
// its compact JSON.
func benchMessages(t testing.TB, name string) [][]byte {
	t.Helper()
	type benchCase struct {
		Input struct {
			Messages []json.RawMessage `json:"messages"`
		} `json:"input"`
	}
	cases, err := testcorpus.Decode[benchCase]("../../conversation/testdata/bench/" + name + ".jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: empty", name)
	}
	c := cases[0]
	out := make([][]byte, len(c.Input.Messages))
	for i, r := range c.Input.Messages {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatal(err)
		}
		if out[i], err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestShortConversations measures what a worker holds for conversations of
// a few messages, where what every conversation holds whatever its length
// (its tables, its index and walk state, its state here) weighs as much as
// the messages: 1,000 conversations of n chained messages of 256-byte
// content each, built as a worker builds them, with the flat list's JSON
// kept, and, live, the store state of a snapshot write pending. The
// estimate the caches budget with (convState.weight, see WithCacheBytes)
// must cover what they hold, and they must stay within issue 6's 3x of
// their JSON, live and compacted (as idle conversations, most of a cache,
// are). Those of one and two messages held 2.96 and 2.98 times theirs
// live with the state at 224 bytes (208 since the cache keeps its own
// bookkeeping) and the store state at 32; it was 3.15 and 3.07 with a
// store state of 96. The ratios are logged (go test -run
// TestShortConversations -v ./streams/worker).
func TestShortConversations(t *testing.T) {
	// The sizes the ratios of one and two messages rest on: a field added
	// to either struct takes it to the next size class.
	if n := unsafe.Sizeof(convState{}); n > 224 {
		t.Errorf("a state takes %d bytes, over 224", n)
	}
	if n := unsafe.Sizeof(storeState{}); n > 32 {
		t.Errorf("a store state takes %d bytes, over 32", n)
	}
	const convs = 1000
	content := strings.Repeat("x", 256)
	for _, n := range []int{1, 2, 5, 20, 50} {
		fields := make([][]map[string]any, convs)
		jsonBytes := 0
		for i := range fields {
			for k := range n {
				f := map[string]any{"id": fmt.Sprintf("c%d-m%d", i, k), "role": []string{"user", "assistant"}[k%2],
					"content": content, "createdAt": float64(1_700_000_000_000 + k)}
				if k > 0 {
					f["parentId"] = fmt.Sprintf("c%d-m%d", i, k-1)
				}
				raw, err := json.Marshal(f)
				if err != nil {
					t.Fatal(err)
				}
				jsonBytes += len(raw)
				fields[i] = append(fields[i], f)
			}
		}
		before := heapInUse()
		sts := make([]*convState, convs)
		for i, fs := range fields {
			conv := conversation.NewConversation()
			var flat []*conversation.Message
			for _, f := range fs {
				m, err := conversation.NewMessage(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := conv.Append(m); err != nil {
					t.Fatal(err)
				}
				if flat, err = conv.FlatList(); err != nil {
					t.Fatal(err)
				}
			}
			st := heldState(t, conv, flat)
			st.storeQueue() // a live state with a snapshot write pending has one
			sts[i] = st
		}
		held := heapInUse() - before
		runtime.KeepAlive(fields) // held in before too
		weight := totalWeight(sts)
		ratio := float64(held) / float64(jsonBytes)
		t.Logf("%d conversations of %d: %d bytes held each, %.2fx their JSON; estimated %d, %.2fx what they hold",
			convs, n, held/convs, ratio, weight/convs, float64(weight)/float64(held))
		if weight < held {
			t.Errorf("conversations of %d: estimated at %d bytes, holding %d", n, weight, held)
		}
		if ratio > 3 {
			t.Errorf("conversations of %d: %.2fx the JSON size held", n, ratio)
		}
		// Gone quiet, as the sweep compacts them (--cache-idle).
		for _, st := range sts {
			st.conv.Compact()
			st.dropStore()
		}
		held = heapInUse() - before
		runtime.KeepAlive(fields)
		weight = totalWeight(sts)
		ratio = float64(held) / float64(jsonBytes)
		t.Logf("  compacted: %d bytes held each, %.2fx their JSON; estimated %d, %.2fx what they hold",
			held/convs, ratio, weight/convs, float64(weight)/float64(held))
		if weight < held {
			t.Errorf("compacted conversations of %d: estimated at %d bytes, holding %d", n, weight, held)
		}
		if ratio > 3 {
			t.Errorf("compacted conversations of %d: %.2fx the JSON size held", n, ratio)
		}
	}
}

// TestCorpusMemoryEstimate compares what the conformance corpus's
// conversations hold, built as a worker builds them (groups, then one
// message at a time, the flat list after each), with what the caches
// estimate (convState.weight): the estimate must cover it. The corpus's
// conversations are small and rich in virtual messages (assistant groups,
// tasks, compares), whose decoded maps cost several times their JSON.
func TestCorpusMemoryEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the conformance corpus")
	}
	for _, file := range []string{"generated-normal.jsonl.gz", "generated-noise.jsonl.gz", "reference-suite.jsonl.gz"} {
		cases := natstest.LoadCorpus(t, file, 1000)
		before := heapInUse()
		sts := make([]*convState, 0, len(cases))
		for _, c := range cases {
			conv := conversation.NewConversation()
			for _, g := range c.Groups {
				if err := conv.UpsertGroup(g); err != nil {
					t.Fatal(err)
				}
			}
			var flat []*conversation.Message
			for _, m := range c.Msgs {
				if err := conv.Append(m); err != nil {
					t.Fatal(err)
				}
				var err error
				if flat, err = conv.FlatList(); err != nil {
					t.Fatal(err)
				}
			}
			sts = append(sts, heldState(t, conv, flat))
		}
		held := heapInUse() - before
		runtime.KeepAlive(cases) // held in before too
		weight := totalWeight(sts)
		t.Logf("%s: %d conversations, %d bytes held each, estimated %.2fx that", file, len(sts), held/int64(len(sts)), float64(weight)/float64(held))
		if weight < held {
			t.Errorf("%s: estimated at %d bytes, holding %d", file, weight, held)
		}
	}
}

// heldState returns the state a worker keeps of conv once it published
// flat, its flat list: the list's JSON, and what of it is derived.
func heldState(t testing.TB, conv *conversation.Conversation, flat []*conversation.Message) *convState {
	t.Helper()
	d, err := diffFlat(nil, flat)
	if err != nil {
		t.Fatal(err)
	}
	st := &convState{conv: conv, flat: flat, flatBytes: int32(d.size())}
	st.flatJSON.replace(flat, 0, d)
	return st
}

// totalWeight returns what the caches would count sts at (convState.weight).
func totalWeight(sts []*convState) int64 {
	var n int64
	for _, st := range sts {
		n += st.weight()
	}
	return n
}
