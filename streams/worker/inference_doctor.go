package worker

import (
	"context"
	"errors"
	"slices"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// serveDoctor answers a request for the diagnosis of a conversation
// (conversation.Diagnose over its stored messages): the messages a user
// cannot see, and the repairs that would show them. It reads the
// conversation as inference does, after the events stored before the
// request (up to the inference wait), and replies with
// TypeDoctorDiagnosis, or a rejection.
func (s *inferenceServer) serveDoctor(ctx context.Context, r micro.Request) {
	ctx, span, q := s.startRequest(ctx, r, "doctor")
	defer span.End()
	conv, ev, requestID := q.conv, q.ev, q.id

	rej := doctorRequest(conv, q.convOK, ev, q.decErr)
	var msgs []*conversation.Message
	var groups []*conversation.MessageGroup
	var version uint64
	if rej == nil {
		msgs, groups, version, rej = s.doctorInput(ctx, conv)
	}
	var diag *conversation.Diagnosis
	if rej == nil {
		var err error
		if diag, err = conversation.Diagnose(msgs, groups, conversation.WithMaxMessages(s.maxMessages)); err != nil {
			rej = streams.Reject(streams.CodeBadData, "diagnosis: %v", err)
		}
	}
	if rej != nil {
		span.SetStatus(codes.Error, rej.Error())
		span.SetAttributes(attribute.String("error.type", string(rej.Code)))
		s.rejectInference(ctx, r, conv, requestID, ev, rej)
		return
	}
	span.SetAttributes(attribute.Int("convstream.doctor.findings", len(diag.Findings)))
	s.reply(ctx, r, conv, "doctor:"+requestID, streams.TypeDoctorDiagnosis,
		streams.DoctorDiagnosis{RequestID: requestID, ConversationID: conv, Version: version, Diagnosis: diag}, "", "")
}

// doctorRequest checks a diagnosis request against the contract.
func doctorRequest(conv string, convOK bool, ev *event.Event, decErr error) *streams.RejectError {
	switch {
	case !convOK:
		return streams.Reject(streams.CodeBadSubject, "subject does not end in a conversation id matching [A-Za-z0-9_-]{1,128}")
	case decErr != nil:
		return streams.Reject(streams.CodeNotCloudEvent, "not a CloudEvent: %v", decErr)
	case ev.Type() != streams.TypeDoctorRequested:
		return streams.Reject(streams.CodeUnknownType, "expected type %s, got %q", streams.TypeDoctorRequested, ev.Type())
	}
	return streams.CheckConversation(ev, conv, false)
}

// doctorInput reads the stored messages and groups of conversation id,
// once the events stored before the request are applied (up to the
// inference wait).
func (s *inferenceServer) doctorInput(ctx context.Context, id string) ([]*conversation.Message, []*conversation.MessageGroup, uint64, *streams.RejectError) {
	var msgs []*conversation.Message
	var groups []*conversation.MessageGroup
	var version uint64
	var rej *streams.RejectError
	var readErr error
	_, err := s.awaitCaughtUp(ctx, id, func() (uint64, bool) {
		var seq uint64
		var err error
		msgs, groups, seq, version, err = s.readMessages(ctx, id)
		rej, readErr = nil, nil
		switch {
		case errors.Is(err, streams.ErrUnknownConversation):
			rej = streams.RejectErr(streams.CodeNotFound, err)
		case err != nil:
			readErr = err
			return 0, true
		}
		return seq, false
	})
	switch {
	case err != nil:
		return nil, nil, 0, streams.Reject(streams.CodeInternal, "%v", err)
	case readErr != nil:
		return nil, nil, 0, streams.Reject(streams.CodeInternal, "reading the conversation: %v", readErr)
	}
	return msgs, groups, version, rej
}

// readMessages copies, on the lane of conversation id, its messages and
// groups, loading it off the lane first when the lane does not hold it
// (Worker.readOnLane).
func (s *inferenceServer) readMessages(ctx context.Context, id string) ([]*conversation.Message, []*conversation.MessageGroup, uint64, uint64, error) {
	var msgs []*conversation.Message
	var groups []*conversation.MessageGroup
	var seq, version uint64
	err := s.read(ctx, id, func(st *convState) (resized bool) {
		// Messages are immutable: the slices are copied, not them.
		msgs, groups = slices.Clone(st.conv.Messages()), slices.Clone(st.conv.Groups())
		seq, version = st.seq, st.version
		return false
	})
	if err != nil {
		// fn may still run later: do not read what it writes.
		return nil, nil, 0, 0, err
	}
	return msgs, groups, seq, version, nil
}
