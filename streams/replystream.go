package streams

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RepliesStreamConfig is the replies stream of the subjects s: a work
// queue of reply requests, each taken by one orchestrator. The worker
// creates it when it provisions, so that an orchestrator needs no right
// to create or change streams (OrchestratorPermissions).
func RepliesStreamConfig(s Subjects) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        s.RepliesStream(),
		Description: "convstream: reply requests, each taken by one orchestrator",
		Subjects:    []string{s.AllReplies()},
		Retention:   jetstream.WorkQueuePolicy,
		// A request nobody took within a day is no longer wanted.
		MaxAge:     24 * time.Hour,
		Duplicates: 2 * time.Minute,
	}
}

// The replies consumer's name and settings unless an orchestrator is told
// otherwise.
const (
	// RepliesConsumer names the durable pull consumer of the replies
	// stream that orchestrators share. The worker creates it with the
	// stream: a work queue takes one consumer without a filter, so once
	// it exists no other can be made there (a push consumer delivering
	// the requests elsewhere included), and the orchestrator role may
	// make or change this one only (OrchestratorPermissions).
	RepliesConsumer = "convstream-orchestrator"
	// DefaultRepliesAckWait is how long a reply request stays with an
	// orchestrator that stopped reporting progress before another takes it
	// (and completes its placeholder as interrupted).
	DefaultRepliesAckWait = 30 * time.Second
	// DefaultRepliesMaxDeliver bounds the deliveries of a reply request.
	DefaultRepliesMaxDeliver = 3
)

// RepliesConsumerConfig is the durable pull consumer name of the replies
// stream, with the given ack wait and deliveries.
func RepliesConsumerConfig(name string, ackWait time.Duration, maxDeliver int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    maxDeliver,
		MaxAckPending: -1,
	}
}

// The errors of a work queue's second consumer (nats-server's
// JSConsumerWQMultipleUnfilteredErr and JSConsumerWQConsumerNotUniqueErr;
// nats.go names neither).
const (
	errCodeWQMultipleUnfiltered jetstream.ErrorCode = 10099
	errCodeWQNotUnique          jetstream.ErrorCode = 10100
)

// IsRepliesConsumerTaken reports whether err is JetStream's refusal of a
// consumer on a work queue (the replies stream) that has another whose
// subjects overlap: one without a filter takes them all.
func IsRepliesConsumerTaken(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeWQMultipleUnfiltered || apiErr.ErrorCode == errCodeWQNotUnique)
}
