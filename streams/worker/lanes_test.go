package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
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
	natstest.WaitFor(t, 5*time.Second, "lane 1 stalled", func() bool {
		i, d := ls.stalled(20 * time.Millisecond)
		return i == 1 && d > 20*time.Millisecond
	})
	close(release)
	natstest.WaitFor(t, 5*time.Second, "no lane stalled", func() bool {
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
	natstest.WaitFor(t, 5*time.Second, "the lane running the first task", func() bool { return ls.all[0].queue.len() == 0 })
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

// TestLaneTakesConversationsInTurns queues a backlog of one conversation
// and then one event of each of three others on a held lane: the others
// run within the first turns, each conversation's events in the order
// queued, and a barrier runs after every event queued before it and
// before every event queued after it.
func TestLaneTakesConversationsInTurns(t *testing.T) {
	ls := newLanes(1, 4, cacheConfig{conversations: 10})
	t.Cleanup(ls.shutdown)
	l := ls.all[0]
	release := make(chan struct{})
	if err := ls.do(context.Background(), l, func() { <-release }); err != nil {
		t.Fatal(err)
	}
	var ran []string // only the lane appends
	event := func(key string, i int) {
		t.Helper()
		name := fmt.Sprintf("%s%d", key, i)
		if err := ls.enqueue(context.Background(), l, key, 10, func(time.Duration) { ran = append(ran, name) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		event("hot", i)
	}
	for _, k := range []string{"a", "b", "c"} {
		event(k, 0)
	}
	if err := ls.barrier(l, func() { ran = append(ran, "barrier") }); err != nil {
		t.Fatal(err)
	}
	event("a", 1)
	event("hot", 10)
	done := make(chan struct{})
	if err := ls.barrier(l, func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	want := []string{"hot0", "a0", "b0", "c0", "hot1", "hot2", "hot3", "hot4", "hot5", "hot6", "hot7", "hot8", "hot9",
		"barrier", "a1", "hot10"}
	if fmt.Sprint(ran) != fmt.Sprint(want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if n := ls.inbox.Load(); n != 0 {
		t.Errorf("the inbox still weighs %d", n)
	}
}
