package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotAcknowledged is returned when JetStream refused an event or did not
// acknowledge it within the run's wait: the run stops instead of waiting
// for effects that cannot come.
var ErrNotAcknowledged = errors.New("loadgen: publish not acknowledged")

// maxPending is how many publishes may await their acknowledgement.
const maxPending = 4096

// publisher publishes a run's events asynchronously and remembers the first
// that failed. Without an acknowledgement timeout a publish whose
// acknowledgement never comes (a server that lost its storage, a subject
// nothing stores) keeps its place among the pending ones for good, and
// once maxPending of them wait, the run waits forever for room.
type publisher struct {
	js jetstream.JetStream

	mu    sync.Mutex
	first error
}

func newPublisher(nc *nats.Conn, wait time.Duration) (*publisher, error) {
	if wait <= 0 {
		wait = time.Minute
	}
	p := &publisher{}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending),
		jetstream.WithPublishAsyncTimeout(wait),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.first == nil {
				p.first = fmt.Errorf("%w: %s: %w", ErrNotAcknowledged, m.Subject, err)
			}
		}))
	if err != nil {
		return nil, err
	}
	p.js = js
	return p, nil
}

// failed returns the first publish that failed, nil while none has.
func (p *publisher) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

// publish publishes msg without waiting for its acknowledgement; when
// maxPending are outstanding (a server slower to acknowledge than the
// generator is to publish, e.g. a replicated stream), it waits for room:
// back-pressure, not a failure. It fails once any publish of the run has.
func (p *publisher) publish(ctx context.Context, msg *nats.Msg) error {
	for {
		if err := p.failed(); err != nil {
			return err
		}
		_, err := p.js.PublishMsgAsync(msg)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			if err != nil {
				return fmt.Errorf("loadgen: publish: %w", err)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// complete waits until every publish is acknowledged, for at most wait.
func (p *publisher) complete(ctx context.Context, wait time.Duration) error {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-time.After(wait):
		return fmt.Errorf("loadgen: publish acknowledgements: %w", ErrIncomplete)
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.failed()
}
