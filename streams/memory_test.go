package streams

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/convstream/convstream/conversation"
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
		d, err := diffFlat(nil, flat)
		if err != nil {
			t.Fatal(err)
		}
		st := &convState{conv: conv, flat: flat, flatJSON: d.tail}
		after := heapInUse()
		runtime.KeepAlive(st)
		per := float64(after-before) / float64(len(raws))
		ratio := float64(after-before) / float64(jsonBytes)
		t.Logf("%s: %d messages, %.0f bytes of JSON each, %.0f bytes held each: %.2fx (the conversation %.2fx, the flat list's JSON %.2fx of %d entries)",
			name, len(raws), float64(jsonBytes)/float64(len(raws)), per, ratio,
			float64(convOnly-before)/float64(jsonBytes), float64(after-convOnly)/float64(jsonBytes), len(flat))
		if ratio > 3 {
			t.Errorf("%s: %.2fx the JSON size held per cached message", name, ratio)
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
	cases, err := testcorpus.Decode[benchCase]("../conversation/testdata/bench/" + name + ".jsonl.gz")
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
