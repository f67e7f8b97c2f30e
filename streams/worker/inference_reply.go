package worker

import (
	"context"
	"fmt"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/convstream/convstream/streams"
)

// The inference server's replies: each is answered to the requester and,
// but for a rejection (kept in the errors stream instead), published on
// the conversation's results subject; none is lost to the server's max
// payload unanswered (TestInferenceTooLarge).

// rejectInference reports a request that cannot be served: as the reply
// and on the errors subject.
func (s *inferenceServer) rejectInference(ctx context.Context, r micro.Request, conv, requestID string, ev *event.Event, rej *streams.RejectError) {
	data := streams.EventRejected{Subject: r.Subject(), Reason: rej.Reason, Code: rej.Code, Path: rej.Path, ConversationID: conv}
	if requestID != "" {
		data.EventID = &requestID
	}
	if ev != nil {
		data.Type = ev.Type()
	}
	id := "rejected:" + requestID
	if requestID == "" {
		id = "rejected:" + nuid.Next()
	}
	if err := s.reports.rejection(ctx, id, data); err != nil {
		s.log.WarnContext(ctx, "inference rejection not published", "err", err)
	}
	s.reply(ctx, r, conv, id, streams.TypeEventRejected, data, "400", rej.Reason)
}

// respond replies with an event and publishes it on the results subject.
func (s *inferenceServer) respond(ctx context.Context, r micro.Request, conv, id, typ string, data any, errCode, errText string) {
	if msg := s.encodeReply(ctx, r, conv, id, typ, data); msg != nil {
		s.respondMsg(ctx, r, msg, errCode, errText)
	}
}

// respondMsg replies with msg and publishes it on the results subject.
func (s *inferenceServer) respondMsg(ctx context.Context, r micro.Request, msg *nats.Msg, errCode, errText string) {
	if !s.send(ctx, r, msg, errCode, errText) {
		return
	}
	if err := s.nc.PublishMsg(msg); err != nil {
		s.log.WarnContext(ctx, "inference result not published", "subject", msg.Subject, "err", err)
	}
}

// reply sends the event as the reply, marked as a service error when
// errCode is set.
func (s *inferenceServer) reply(ctx context.Context, r micro.Request, conv, id, typ string, data any, errCode, errText string) {
	if msg := s.encodeReply(ctx, r, conv, id, typ, data); msg != nil {
		s.send(ctx, r, msg, errCode, errText)
	}
}

// encodeReply encodes the event of a reply, addressed to the results
// subject. On failure it answers r with a bare service error and returns
// nil.
func (s *inferenceServer) encodeReply(ctx context.Context, r micro.Request, conv, id, typ string, data any) *nats.Msg {
	ev, err := streams.NewEvent(id, typ, s.source, conv, data)
	if err == nil {
		streams.InjectTraceContext(ctx, ev)
	}
	var msg *nats.Msg
	if err == nil {
		msg, err = streams.EncodeEvent(s.subjects.Results(conv), ev, streams.Structured)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "inference reply not encoded", "type", typ, "err", err)
		_ = r.Error("500", "reply not encoded", nil)
		return nil
	}
	return msg
}

// send replies with msg, marked as a service error when errCode is set.
// A reply larger than the server takes is answered with a bare service
// error instead, and send returns false: msg cannot be published either.
func (s *inferenceServer) send(ctx context.Context, r micro.Request, msg *nats.Msg, errCode, errText string) bool {
	if size, limit := replySize(msg, errCode, errText), int(s.nc.MaxPayload()); size > limit {
		s.log.ErrorContext(ctx, "inference reply too large", "bytes", size, "max_payload", limit)
		_ = r.Error("500", fmt.Sprintf("reply of %d bytes over the max payload of %d", size, limit), nil)
		return false
	}
	headers := micro.WithHeaders(micro.Headers(msg.Header))
	var err error
	if errCode != "" {
		err = r.Error(errCode, errText, msg.Data, headers)
	} else {
		err = r.Respond(msg.Data, headers)
	}
	if err != nil {
		// micro wraps a failed Respond in ErrRespond; either way the
		// requester did not get this reply (a request without a reply
		// subject, a closing connection), but the results subject may.
		s.log.WarnContext(ctx, "inference reply not sent", "err", err)
	}
	return true
}

// refuseBusy answers a request admission refused (inference_admission.go) with a
// rejection of code busy and a retry hint; kind names its subjects
// (inference, doctor). The request is not decoded, so that a refusal
// costs little whatever it carries, and the refusal is not kept in the
// errors stream: nothing was wrong with the request, and a flood of them
// would push the conversations' records out.
func (s *inferenceServer) refuseBusy(ctx context.Context, r micro.Request, kind, why string) {
	conv, _ := s.subjects.ConversationOf(kind, r.Subject())
	h := nats.Header(r.Headers())
	data := streams.EventRejected{Subject: r.Subject(), Code: streams.CodeBusy, ConversationID: conv,
		Reason:       "busy: " + why,
		RetryAfterMs: max(1, s.admission.retryAfter().Milliseconds())}
	id := h.Get(jetstream.MsgIDHeader)
	if id == "" {
		id = h.Get("Ce-Id") // binary mode
	}
	if id != "" {
		data.EventID = &id
	} else {
		id = nuid.Next()
	}
	s.metrics.inferences.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "busy")))
	s.reply(ctx, r, conv, "rejected:"+id, streams.TypeEventRejected, data, "503", data.Reason)
}

// misdirect drops a request whose reply subject is outside the worker's
// inbox (streams.Answerable): it is counted, and warned of at most once a
// minute, but neither served nor answered.
func (s *inferenceServer) misdirect(ctx context.Context, kind string, r micro.Request) {
	s.metrics.inferences.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "misdirected")))
	s.misdirected.Do(func() {
		s.log.WarnContext(ctx, "a request whose reply subject is outside this worker's inbox is not answered (a client with another --nats-inbox-prefix, or one aiming the answer elsewhere)",
			"kind", kind, "subject", r.Subject(), "reply", r.Reply(), "inbox", streams.ConnInbox(s.nc))
	})
}
