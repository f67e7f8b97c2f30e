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

// TestLaneTry checks that try queues a task only where there is room and
// never waits: not on a full queue, not while a shutdown waits for the
// lanes' lock (a lane's task calls it, and the dispatcher may hold that
// lock blocked on the lane's full queue), not after the lanes closed.
func TestLaneTry(t *testing.T) {
	ls := newLanes(1, 1, cacheConfig{conversations: 10})
	release := make(chan struct{})
	ran := make(chan bool, 1)
	if err := ls.do(context.Background(), ls.all[0], func() {
		<-release
		ran <- ls.try(0, func() {})
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the lane running the first task", func() bool { return ls.all[0].queue.len() == 0 })
	if !ls.try(0, func() {}) {
		t.Fatal("try on an empty queue: not queued")
	}
	if ls.try(0, func() {}) {
		t.Fatal("try on a full queue: queued")
	}
	// The dispatcher: blocked sending to the full queue, holding the lock.
	sent := make(chan error, 1)
	go func() { sent <- ls.do(context.Background(), ls.all[0], func() {}) }()
	time.Sleep(20 * time.Millisecond)
	stopped := make(chan struct{})
	go func() {
		ls.shutdown()
		close(stopped)
	}()
	time.Sleep(20 * time.Millisecond) // shutdown now waits for the lock
	close(release)
	select {
	case ok := <-ran:
		if ok {
			t.Error("try while a shutdown waits: queued")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("try waited for the lock")
	}
	if err := <-sent; err != nil {
		t.Errorf("the dispatcher's send: %v", err)
	}
	<-stopped
	if ls.try(0, func() {}) {
		t.Error("try after shutdown: queued")
	}
}
