package worker

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// nextWait bounds the wait of a consumer's Next right after a message.
//
// nats.go's message iterator (v1.55.0) asks the server for more messages
// only at the start of a Next, and not while its previous request is
// still being sent: a goroutine of its own sends each request and clears
// a flag when done, and nothing looks again once it has. When the lanes
// take every buffered message before that goroutine has run (a busy
// CPU: each Next then finds the flag set), the last Next waits on an
// empty buffer with no request at the server, until the iterator's
// heartbeat check gives up one second later ("fetching events: nats: no
// heartbeat received"). Flat out, that was a stall of about a second in
// each round of `make -C bench load LOAD_ARGS="--warmup --rounds 3"`,
// which halved the worker's sustained rate (BENCHMARKS.md, "The
// iterator's stall"). A Next that follows a message now gives up after
// nextWait, and the one after it asks again.
const nextWait = 100 * time.Millisecond

// pullIterator is a consumer's message iterator whose Next does not wait
// out the stall nextWait describes. Only a Next right after a message is
// bounded: the one after a bounded wait ran out waits as long as it
// takes, so that the iterator's heartbeat check, which lives within one
// Next, still finds a pull the server no longer holds, and an idle
// consumer does not wake every nextWait. It is used by one goroutine.
type pullIterator struct {
	it jetstream.MessagesContext
	// bounded is whether the last Next returned a message.
	bounded bool
}

func newPullIterator(it jetstream.MessagesContext) *pullIterator { return &pullIterator{it: it} }

// Next returns the next message, or the iterator's error; never the
// timeout of a bounded wait.
func (p *pullIterator) Next() (jetstream.Msg, error) {
	for {
		var m jetstream.Msg
		var err error
		if p.bounded {
			m, err = p.it.Next(jetstream.NextMaxWait(nextWait))
		} else {
			m, err = p.it.Next()
		}
		if p.bounded && errors.Is(err, nats.ErrTimeout) {
			p.bounded = false
			continue
		}
		p.bounded = err == nil
		return m, err
	}
}
