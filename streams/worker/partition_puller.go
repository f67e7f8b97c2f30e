package worker

import (
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// puller is one partition's pull: pull takes its events into in, and
// forward hands them to the lanes, as mode says.
type puller struct {
	it   jetstream.MessagesContext
	in   *intake
	done chan struct{} // closed once forward has dealt with everything fetched

	mu      sync.Mutex // held by forward while it hands an event on
	changed *sync.Cond // on mu: mode changed
	mode    forwardMode
}

// forwardMode is what forward does with the events it takes.
type forwardMode uint8

const (
	// forwarding hands them to the lanes.
	forwarding forwardMode = iota
	// holding keeps them in the intake while a hand-off stores the
	// partition's conversations; the pull goes on, renewing the pin.
	holding
	// returning hands them back to the server (nak): the hand-off stored
	// everything before them, and the next owner applies them.
	returning
)

func newPuller(it jetstream.MessagesContext) *puller {
	pl := &puller{it: it, in: newIntake(intakeMaxBytes), done: make(chan struct{})}
	pl.changed = sync.NewCond(&pl.mu)
	return pl
}

// setMode sets what forward does with the events it takes next. It returns
// once forward is not handing an event to the lanes, so that every event
// forwarded before is queued on its lane.
func (pl *puller) setMode(m forwardMode) {
	pl.mu.Lock()
	pl.mode = m
	pl.mu.Unlock()
	pl.changed.Broadcast()
}

// stop ends the pull: what it fetched is handed to the lanes (or back to
// the server, when returning), then stop returns.
func (pl *puller) stop() {
	pl.mu.Lock()
	if pl.mode == holding {
		pl.mode = forwarding
	}
	pl.mu.Unlock()
	pl.changed.Broadcast()
	pl.it.Drain()
	<-pl.done
}

// pull takes partition p's events into pl.in until the pull stops,
// without waiting for the lanes (see intake). It keeps the books of the
// partition's tenures: an event under a pin id this worker retired is
// handed back, and the first under a new one is marked for forward.
func (o *ownership) pull(p int, pl *puller) {
	defer pl.in.close()
	pi := newPullIterator(pl.it)
	for {
		m, err := pi.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
			return
		}
		if errors.Is(err, jetstream.ErrPinIDMismatch) {
			// The server pinned another worker: events of the tenure that
			// ended, still buffered or queued here, are handed back.
			o.mu.Lock()
			held := o.pins[p] != ""
			o.mu.Unlock()
			if held {
				o.lose(p)
			}
			continue
		}
		if err != nil {
			// Missed heartbeats and the like: the iterator recovers.
			o.w.cfg.logger.DebugContext(o.work, "pulling a partition", "partition", p, "err", err)
			continue
		}
		f := fetched{msg: m, gaps: o.w.delivered(o.work, p, m)}
		if pin := m.Headers().Get(headerPinID); pin != "" {
			o.mu.Lock()
			_, old := o.retired[pin]
			prev := o.pins[p]
			fresh := !old && prev != pin
			if !old {
				o.pins[p] = pin
			}
			o.mu.Unlock()
			if old {
				_ = m.Nak() // the partition's next owner applies it (never held)
				continue
			}
			switch {
			case fresh && prev != "":
				f.tenure = renewedTenure
				o.w.cfg.logger.InfoContext(o.work, "partition pinned again", "partition", p)
			case fresh:
				f.tenure = acquiredTenure
				o.w.owned[p].Store(true)
				o.w.cfg.logger.InfoContext(o.work, "partition acquired", "partition", p)
				o.w.partitionMetrics.changed(o.work, partitionAcquired)
			}
		}
		o.w.progress.hold(pendingAckOf(m))
		if began := time.Now(); pl.in.push(f) && time.Since(began) > time.Second {
			o.w.cfg.logger.WarnContext(o.work, "partition intake full: its pull waited for the lanes",
				"partition", p, "waited", time.Since(began).Round(time.Millisecond), "max_bytes", intakeMaxBytes)
		}
	}
}

// forward hands the events pull took to the lanes, in order, or holds or
// returns them as pl's mode says. The first event of a new tenure first
// drops the partition's conversations from memory (another worker may
// have changed them since), or, pinned again while holding the partition,
// has them checked against the stream before their next event rather
// than thrown away (which would apply their unstored events a second
// time): another worker may have held the partition in between.
func (o *ownership) forward(p int, pl *puller) {
	defer close(pl.done)
	for {
		f, ok := pl.in.next()
		if !ok {
			return
		}
		pl.mu.Lock()
		for pl.mode == holding {
			pl.changed.Wait()
		}
		if pl.mode == returning {
			pl.mu.Unlock()
			o.w.settled(f.msg)
			_ = f.msg.Nak() // the partition's next owner applies it
			continue
		}
		switch f.tenure {
		case renewedTenure:
			o.suspect(p)
		case acquiredTenure:
			o.forget(p)
		}
		o.w.route(o.work, f.msg, f.gaps)
		pl.mu.Unlock()
	}
}
