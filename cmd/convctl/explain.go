package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// explain turns an error reading a conversation into one that says what
// to do: a subject prefix no worker serves (no stream, no bucket) is named
// as such; a conversation with no snapshot but events stored is one no
// worker has applied, not an unknown one (TestWatchExplains).
func explain(ctx context.Context, nc *nats.Conn, prefix, conv string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return wrongPrefix(prefix, err)
	}
	if !errors.Is(err, streams.ErrUnknownConversation) {
		return err
	}
	last, serr := lastEvent(ctx, nc, prefix, conv)
	switch {
	case errors.Is(serr, jetstream.ErrStreamNotFound):
		return wrongPrefix(prefix, err)
	case serr != nil || last == nil:
		return err // no event stored either: unknown indeed
	}
	return &notAppliedError{conv: conv, prefix: prefix, last: last, err: err}
}

// notAppliedError is a conversation with events stored and no snapshot.
type notAppliedError struct {
	conv, prefix string
	last         *jetstream.RawStreamMsg
	err          error
}

func (e *notAppliedError) Error() string {
	return fmt.Sprintf("conversation %s has events stored (the last at stream sequence %d, %s) but no snapshot: no worker has applied them; start one with subject prefix %q (make run), or see its log",
		e.conv, e.last.Sequence, e.last.Time.UTC().Format("2006-01-02T15:04:05Z"), e.prefix)
}

func (e *notAppliedError) Unwrap() error { return e.err }

// lastEvent returns the last event stored for a conversation, nil when
// there is none.
func lastEvent(ctx context.Context, nc *nats.Conn, prefix, conv string) (*jetstream.RawStreamMsg, error) {
	subjects, err := streams.NewSubjects(prefix)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stream, err := js.Stream(ctx, subjects.EventsStream())
	if err != nil {
		return nil, err
	}
	m, err := stream.GetLastMsgForSubject(ctx, subjects.Events(conv))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// wrongPrefix says that nothing of the deployment exists under prefix.
func wrongPrefix(prefix string, err error) error {
	return fmt.Errorf("no convstream stream or bucket for subject prefix %q: check --subject-prefix (CONVSTREAM_SUBJECT_PREFIX), or start a worker with that prefix, which creates them: %w", prefix, err)
}
