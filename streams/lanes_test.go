package streams

import (
	"context"
	"testing"
	"time"
)

// TestLaneStalled holds one lane with a task and requires stalled to name
// it once the task has run past the limit, and nothing after it ends.
func TestLaneStalled(t *testing.T) {
	ls := newLanes(2, 4, cacheConfig{conversations: 10})
	t.Cleanup(ls.shutdown)
	if i, _ := ls.stalled(0); i != -1 {
		t.Fatalf("idle lanes: lane %d stalled", i)
	}
	release := make(chan struct{})
	if err := ls.do(context.Background(), ls.all[1], func() { <-release }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "lane 1 stalled", func() bool {
		i, d := ls.stalled(20 * time.Millisecond)
		return i == 1 && d > 20*time.Millisecond
	})
	close(release)
	waitFor(t, 5*time.Second, "no lane stalled", func() bool {
		i, _ := ls.stalled(0)
		return i == -1
	})
}
