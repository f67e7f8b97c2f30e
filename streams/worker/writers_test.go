package worker

import (
	"sync"
	"testing"
	"time"
)

// TestWriters: writes run in parallel however many are in flight, an idle
// writer takes the next one, and a write handed over after stop still
// runs.
func TestWriters(t *testing.T) {
	ws := newWriters()
	release := make(chan struct{})
	var started, done sync.WaitGroup
	for range 3 {
		started.Add(1)
		done.Add(1)
		ws.run(func() { started.Done(); <-release; done.Done() })
	}
	waitGroup(t, &started, "three writes running at once")
	close(release)
	waitGroup(t, &done, "three writes done")
	for range 10 { // the idle writers take these, one at a time
		runOne(t, ws, "a write handed to an idle writer")
	}
	ws.stop()
	ws.stop()
	runOne(t, ws, "a write handed over after stop")
}

// runOne hands ws one write and waits for it to run.
func runOne(t *testing.T, ws *writers, what string) {
	t.Helper()
	ran := make(chan struct{})
	ws.run(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not run", what)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
