package worker

import (
	"sync"
	"time"
)

// writerIdle is how long a snapshot writer waits for its next write
// before it exits.
const writerIdle = time.Second

// writers runs snapshot writes in parallel, on goroutines that outlive
// one write: a goroutine started per write began
// with a small stack and grew it again in every write (nats.go decodes
// the publish acknowledgement with encoding/json, deep enough to copy the
// stack twice), 2% of the worker's CPU at 8,000 events a second. As many
// run at once as writes are in flight; idle ones exit after writerIdle,
// or at once after stop.
type writers struct {
	jobs     chan func() // unbuffered: a send succeeds only to an idle writer
	quit     chan struct{}
	stopOnce sync.Once
}

func newWriters() *writers {
	return &writers{jobs: make(chan func()), quit: make(chan struct{})}
}

// run starts job on an idle writer, or on a new one.
func (ws *writers) run(job func()) {
	select {
	case ws.jobs <- job:
	default:
		go ws.loop(job)
	}
}

func (ws *writers) loop(job func()) {
	idle := time.NewTimer(writerIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(writerIdle)
		select {
		case job = <-ws.jobs:
		case <-idle.C:
			return
		case <-ws.quit:
			return
		}
	}
}

// stop lets idle writers exit; writes running finish, and a later run
// still runs its job (on a goroutine that exits after it).
func (ws *writers) stop() { ws.stopOnce.Do(func() { close(ws.quit) }) }
