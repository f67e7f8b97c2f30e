package streams

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
)

// TestCacheBytes drives conversations whose messages weigh about 5 times
// the worker's byte budget: what the cache holds stays within the budget (sampled while
// events flow), evicted conversations are stored first and rebuilt when
// their next event comes, and every conversation ends equal to Parse of
// its messages.
func TestCacheBytes(t *testing.T) {
	const (
		budget = 256 << 10
		convs  = 60
		rounds = 12
	)
	ns := startServer(t, "")
	nc := connect(t, ns)
	r := startWorker(t, nc, WithCacheBytes(budget), WithLanes(2))
	c := newClient(t, nc)
	ctx := context.Background()

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if b := r.w.CacheBytes(); b > peak.Load() {
				peak.Store(b)
			}
		}
	}()
	content := strings.Repeat("all work and no play ", 80) // 1,680 bytes
	want := map[string]*conversation.Conversation{}
	jsonBytes := 0
	for k := range rounds {
		for i := range convs {
			conv := fmt.Sprintf("cb%02d", i)
			if want[conv] == nil {
				want[conv] = conversation.NewConversation()
			}
			data := map[string]any{"id": fmt.Sprintf("m%d", k), "role": []string{"user", "assistant"}[k%2], "content": content, "parentId": nil}
			if k > 0 {
				data["parentId"] = fmt.Sprintf("m%d", k-1)
			}
			m, err := conversation.NewMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := want[conv].Append(m); err != nil {
				t.Fatal(err)
			}
			raw, _ := m.JSON()
			jsonBytes += len(raw)
			if _, err := c.Send(ctx, conv, TypeMessageAppended, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	for conv, live := range want {
		snap := waitCaughtUp(t, c, conv, 30*time.Second)
		res, err := live.Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := snapshotDiff(t, snap, res); d != "" {
			t.Errorf("%s: %s", conv, d)
		}
	}
	close(stop)
	<-sampled
	// One conversation alone may go over its lane's share while it is in
	// use; here each weighs far less than a share.
	if p := peak.Load(); p > budget {
		t.Errorf("the cache weighed %d bytes at its peak, over the budget of %d", p, budget)
	}
	t.Logf("%d conversations, %d bytes of messages' JSON; cache budget %d, peak %d, now %d",
		convs, jsonBytes, budget, peak.Load(), r.w.CacheBytes())
}
