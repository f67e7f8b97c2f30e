package conversation

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
)

// TestCompactReleases builds many small conversations as a worker caches
// them (a chain read after every append), compacts them, and requires
// that they then hold clearly fewer heap objects, which is what the
// garbage collector's marking costs; and that their views still equal
// Parse, before any change and after one.
func TestCompactReleases(t *testing.T) {
	const convs, msgs = 300, 21
	objects := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapObjects
	}
	base := objects()
	all := make([]*Conversation, convs)
	for i := range all {
		conv := NewConversation()
		for k := range msgs {
			if err := conv.Append(chainMessage(k)); err != nil {
				t.Fatal(err)
			}
			if _, err := conv.FlatList(); err != nil {
				t.Fatal(err)
			}
		}
		all[i] = conv
	}
	hot := objects() - base
	for _, conv := range all {
		conv.Compact()
	}
	cold := objects() - base
	t.Logf("%d conversations of %d messages: %d heap objects, %d compacted", convs, msgs, hot, cold)
	if cold > hot*3/4 {
		t.Errorf("compacted conversations hold %d heap objects, want under 3/4 of %d", cold, hot)
	}
	for i, conv := range all[:20] {
		checkAgainstParse(t, fmt.Sprintf("conversation %d compacted", i), msgs, conv)
		conv.Compact()
		if err := conv.Append(chainMessage(msgs)); err != nil {
			t.Fatal(err)
		}
		checkAgainstParse(t, fmt.Sprintf("conversation %d compacted, then appended to", i), msgs+1, conv)
	}
	runtime.KeepAlive(all)
}

// TestCompactTree reads the context tree first after a compaction: the
// index it builds on must be rebuilt first.
func TestCompactTree(t *testing.T) {
	conv := NewConversation()
	for k := range 5 {
		if err := conv.Append(chainMessage(k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conv.FlatList(); err != nil {
		t.Fatal(err)
	}
	conv.Compact()
	tree, err := conv.ContextTree()
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse(conv.Messages(), conv.Groups())
	if err != nil {
		t.Fatal(err)
	}
	if d := jsondiff.Diff(jsonValue(t, want.ContextTree), jsonValue(t, tree)); d != "" {
		t.Fatalf("context tree after Compact: %s", d)
	}
}
