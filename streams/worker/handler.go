package worker

import (
	"context"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
)

// outcome is what became of a delivery.
type outcome int

const (
	pending  outcome = iota
	applied          // the event took effect; a snapshot delta was published
	skipped          // already applied (a redelivery); nothing to do
	rejected         // refused and reported; the event is terminated
)

func (o outcome) String() string {
	switch o {
	case applied:
		return "applied"
	case skipped:
		return "skipped"
	case rejected:
		return "rejected"
	}
	return "pending"
}

// delivery is one JetStream message on its way through the stages. decode
// fills the first block; the stages fill the rest.
type delivery struct {
	msg     jetstream.Msg
	lane    *lane
	subject string
	seq     uint64    // events-stream sequence
	stored  time.Time // when JetStream stored the event
	// delivered is how many times JetStream has delivered the event, this
	// time included (0 for an event read from the stream by sequence).
	delivered uint64
	received  time.Time
	size      int
	// behind is how long the event waited on its lane behind earlier
	// events of its conversation: the conversation's own backlog, which
	// says nothing of how far behind the worker is (see observeLag).
	behind time.Duration
	// gaps is the count of breaks in its consumer's deliveries as of its
	// arrival (see gapWatch).
	gaps uint32

	conversationID string       // from the subject; "" when unusable
	event          *event.Event // nil when the message is not a CloudEvent
	eventID        string       // the event id, or Nats-Msg-Id when undecodable
	decodeErr      error        // a *RejectError when decode refused the message

	data  map[string]any // the event's data, once validated
	state *convState     // the conversation, once loaded
	// preload is the conversation loaded ahead, off the lane, for this
	// delivery (see park); nil when it was not.
	preload *loadResult
	dirty   bool // state changed in memory but not yet stored
	// undo takes the event's change back should it be refused after it
	// was applied (handler_undo.go).
	undo undoStep
	// message is an append's message when validate built it straight from
	// data already in the form a message keeps (data is then nil).
	message *conversation.Message

	outcome outcome
	version uint64 // the snapshot version published
	// unstored: the event is applied but no stored snapshot covers it yet;
	// it is acknowledged after the store (store_write.go).
	unstored bool
}

// handlerFunc handles one delivery. A nil error means ack; an error wrapping
// ErrRejected means terminate; any other error means redeliver later.
type handlerFunc func(ctx context.Context, d *delivery) error

// middleware wraps a handlerFunc with one cross-cutting concern. Each is
// made by a constructor taking what it depends on, one a file (middleware_tracing.go,
// middleware_measuring.go, middleware_reject.go, middleware_recoverer.go), and New assembles the chain.
type middleware func(handlerFunc) handlerFunc

// stage is one step of the handler; a stage that settles the delivery
// (sets its outcome) ends the run.
type stage func(ctx context.Context, d *delivery) error

// chain runs stages in order until one fails or settles the delivery, and
// wraps the result in middlewares, the first outermost.
func chain(stages []stage, mws ...middleware) handlerFunc {
	h := func(ctx context.Context, d *delivery) error {
		for _, s := range stages {
			if err := s(ctx, d); err != nil {
				return err
			}
			if d.outcome != pending {
				return nil
			}
		}
		return nil
	}
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
