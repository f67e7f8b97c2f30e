package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/streams"
)

// InferenceService is the name of the NATS micro service answering
// inference requests (discoverable with `nats micro ls`).
const InferenceService = "convstream-inference"

// inferenceServer is the micro service on the inference subjects. Requests
// are handled concurrently, at most inferenceWorkers at a time.
type inferenceServer struct {
	svc micro.Service
	sem chan struct{}
	wg  sync.WaitGroup

	mu     sync.Mutex // orders wg.Add before stop's wg.Wait
	closed bool
}

func (s *inferenceServer) start(ctx context.Context, w *Worker) error {
	svc, err := micro.AddService(w.nc, micro.Config{
		Name:        InferenceService,
		Version:     "1.0.0",
		Description: "convstream: the context of a conversation, prepared by a pipeline, for a model call",
	})
	if err != nil {
		return fmt.Errorf("streams: inference service: %w", err)
	}
	s.sem = make(chan struct{}, w.cfg.inferenceWorkers)
	handler := func(serve func(context.Context, micro.Request)) micro.Handler {
		return micro.HandlerFunc(func(r micro.Request) {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				_ = r.Error("503", "worker shutting down", nil)
				return
			}
			s.wg.Add(1)
			s.mu.Unlock()
			// Blocking here when all workers are busy holds further requests
			// in the subscription: backpressure rather than unbounded goroutines.
			s.sem <- struct{}{}
			go func() {
				defer func() { <-s.sem; s.wg.Done() }()
				serve(ctx, r)
			}()
		})
	}
	if err := svc.AddEndpoint("inference", handler(w.serveInference), micro.WithEndpointSubject(w.cfg.subjects.AllInference())); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("streams: inference endpoint: %w", err)
	}
	if err := svc.AddEndpoint("doctor", handler(w.serveDoctor), micro.WithEndpointSubject(w.cfg.subjects.AllDoctor())); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("streams: doctor endpoint: %w", err)
	}
	s.svc = svc
	return nil
}

// stop unsubscribes and waits for requests in progress.
func (s *inferenceServer) stop() {
	if s.svc == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	_ = s.svc.Stop()
	s.wg.Wait()
}

// inferenceView is what an inference run reads of a conversation.
type inferenceView struct {
	messages []enginecore.Message
	version  uint64
	seq      uint64
}

// serveInference answers one request: the context ending at the leaf, run
// through the pipeline, replied and published on the results subject; or a
// pipeline failure; or, for a request that cannot be served, a rejection
// (replied and published on the errors subject).
func (w *Worker) serveInference(ctx context.Context, r micro.Request) {
	start := time.Now()
	ctx, span, q := w.startRequest(ctx, r, "inference")
	defer span.End()
	conv, convOK, ev, decErr, requestID := q.conv, q.convOK, q.ev, q.decErr, q.id

	outcome := "context"
	errType := "_OTHER" // error.type of a failure: the rejection's or failure's code
	defer func() {
		span.SetAttributes(attribute.String("convstream.outcome", outcome))
		if outcome != "context" {
			span.SetAttributes(attribute.String("error.type", errType))
		}
		w.metrics.inferences.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	}()

	req, rej := w.inferenceRequest(conv, convOK, ev, decErr)
	var view inferenceView
	var eng *enginecore.Engine
	if rej == nil {
		span.SetAttributes(attribute.String("convstream.pipeline", req.Pipeline), attribute.String("convstream.leaf_id", req.LeafID))
		view, rej = w.inferenceInput(ctx, req)
	}
	if rej == nil {
		var err error
		eng, err = w.cfg.pipelines.Pipeline(ctx, req.Pipeline, req.Params,
			enginecore.WithObserver(processorObserver{tracer: w.tracer, ins: w.metrics}),
			enginecore.WithLogger(w.cfg.logger),
			enginecore.WithLimits(w.cfg.inferenceLimits))
		switch {
		case errors.Is(err, streams.ErrUnknownPipeline):
			rej = streams.RejectErr(streams.CodeUnknownPipeline, err)
		case err != nil:
			rej = streams.Reject(streams.CodeBadData, "pipeline %q: %v", req.Pipeline, err)
		}
	}
	if rej != nil {
		outcome, errType = "rejected", rej.Code
		span.SetStatus(codes.Error, rej.Error())
		w.rejectInference(ctx, r, conv, requestID, ev, rej)
		return
	}

	runCtx, cancel := context.WithTimeout(ctx, w.cfg.inferenceTimeout)
	res, err := eng.Process(runCtx, view.messages)
	cancel()
	w.metrics.pipelineDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(
		attribute.String("pipeline", req.Pipeline), attribute.Bool("error", err != nil)))
	if err != nil {
		outcome = "failed"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		failed := pipelineFailure(requestID, conv, req.Pipeline, err)
		errType = failed.Code
		w.cfg.logger.WarnContext(ctx, "pipeline failed", "conversation", conv, "pipeline", req.Pipeline,
			"processor", failed.Processor, "code", failed.Code, "err", err)
		w.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		w.reports.failure(ctx, "failed:"+requestID, failed)
		return
	}
	built, err := w.modelRequest(res.Messages, req)
	if err != nil {
		outcome = "failed"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		failed := formatFailure(requestID, conv, req.Pipeline, err)
		errType = failed.Code
		w.cfg.logger.WarnContext(ctx, "inference context not written", "conversation", conv, "format", req.Format, "code", failed.Code, "err", err)
		w.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		w.reports.failure(ctx, "failed:"+requestID, failed)
		return
	}
	out := streams.InferenceContext{
		RequestID:      requestID,
		ConversationID: conv,
		Messages:       built.Messages,
		Format:         string(built.Format),
		Request:        built.Body,
		Usage:          built.Usage,
		Metadata:       res.Metadata,
		Stats:          res.Stats,
		IsAborted:      res.IsAborted,
		AbortReason:    res.AbortReason,
		Pipeline:       req.Pipeline,
		LeafID:         req.LeafID,
		Version:        view.version,
	}
	if out.Messages == nil {
		out.Messages = []enginecore.Message{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	msg := w.encodeReply(ctx, r, conv, "context:"+requestID, streams.TypeInferenceContext, out)
	if msg == nil {
		outcome = "failed"
		return
	}
	// A context the server would refuse must still be answered: nats.go
	// refuses the reply before it is sent, and micro hands that back as a
	// respond error, so without this check the requester heard nothing
	// (TestInferenceTooLarge).
	if size, limit := replySize(msg, "", ""), int(w.nc.MaxPayload()); size > limit {
		outcome = "failed"
		failed := tooLargeFailure(out, size, limit)
		errType = failed.Code
		span.SetStatus(codes.Error, failed.Message)
		w.cfg.logger.WarnContext(ctx, "inference context too large for a reply", "conversation", conv, "pipeline", req.Pipeline,
			"bytes", size, "max_payload", limit)
		w.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		return
	}
	w.respondMsg(ctx, r, msg, "", "")
}

// request is a request of the micro service as decoded by startRequest.
type request struct {
	conv   string // the conversation of the subject; "" when unusable
	convOK bool
	ev     *event.Event // nil when not a CloudEvent
	decErr error
	id     string // the event id, else Nats-Msg-Id
}

// startRequest decodes a request on the subjects of kind (inference,
// doctor) and starts its server span, continuing the requester's trace.
func (w *Worker) startRequest(ctx context.Context, r micro.Request, kind string) (context.Context, trace.Span, request) {
	var q request
	q.conv, q.convOK = w.cfg.subjects.ConversationOf(kind, r.Subject())
	h := nats.Header(r.Headers())
	q.ev, q.decErr = streams.DecodeEvent(h, r.Data())
	q.id = h.Get(jetstream.MsgIDHeader)
	if q.ev != nil {
		q.id = q.ev.ID()
		ctx = streams.ExtractTraceContext(ctx, q.ev)
	}
	ctx, span := w.tracer.Start(ctx, kind, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", "process"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.consumer.group.name", micro.DefaultQueueGroup),
			attribute.String("messaging.destination.name", r.Subject()),
			attribute.String("messaging.message.id", q.id),
			attribute.String("convstream.conversation_id", q.conv),
		))
	return ctx, span, q
}

// lastStoredSeq returns the stream sequence of the last event of
// conversation id (0: none, or it could not be read): what a read waits to
// see applied, so that a client reads its own writes.
func (w *Worker) lastStoredSeq(ctx context.Context, id string) uint64 {
	last, err := w.stream.GetLastMsgForSubject(ctx, w.eventSubject(id))
	if err == nil {
		return last.Sequence
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		w.cfg.logger.WarnContext(ctx, "reading the last event of a conversation", "conversation", id, "err", err)
	}
	return 0
}

// inferenceRequest checks a request against the contract.
func (w *Worker) inferenceRequest(conv string, convOK bool, ev *event.Event, decErr error) (streams.InferenceRequest, *streams.RejectError) {
	var req streams.InferenceRequest
	switch {
	case !convOK:
		return req, streams.Reject(streams.CodeBadSubject, "subject does not end in a conversation id matching [A-Za-z0-9_-]{1,128}")
	case decErr != nil:
		return req, streams.Reject(streams.CodeNotCloudEvent, "not a CloudEvent: %v", decErr)
	case ev.Type() != streams.TypeInferenceRequested:
		return req, streams.Reject(streams.CodeUnknownType, "expected type %s, got %q", streams.TypeInferenceRequested, ev.Type())
	}
	if rej := streams.CheckConversation(ev, conv, false); rej != nil {
		return req, rej
	}
	data, err := streams.DecodeData(ev)
	if err != nil {
		if errors.Is(err, streams.ErrUnsupportedContentType) {
			return req, streams.RejectErr(streams.CodeContentType, err)
		}
		return req, streams.Reject(streams.CodeBadData, "data: %v", err)
	}
	var ok bool
	if req.ConversationID, ok = data["conversationId"].(string); !ok || req.ConversationID != conv {
		return req, streams.Reject(streams.CodeBadConversation, "data.conversationId %v does not match subject conversation %q", data["conversationId"], conv)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"leafId", &req.LeafID}, {"pipeline", &req.Pipeline}} {
		if v, present := data[f.name]; present && v != nil {
			if *f.dst, ok = v.(string); !ok {
				return req, streams.Reject(streams.CodeBadData, "data.%s must be a string", f.name)
			}
		}
	}
	if v, present := data["params"]; present && v != nil {
		if req.Params, ok = v.(map[string]any); !ok {
			return req, streams.Reject(streams.CodeBadData, "data.params must be an object")
		}
	}
	if rej := decodeFormat(data, &req); rej != nil {
		return req, rej
	}
	if req.Pipeline == "" {
		req.Pipeline = DefaultPipeline
	}
	return req, nil
}

// inferenceInput reads the messages the pipeline starts from. It first
// waits (up to the inference wait) until every event of the conversation
// stored before the request has been handled, so that a client that
// publishes and then asks sees its own events.
func (w *Worker) inferenceInput(ctx context.Context, req streams.InferenceRequest) (inferenceView, *streams.RejectError) {
	target := w.lastStoredSeq(ctx, req.ConversationID)
	deadline := time.Now().Add(w.cfg.inferenceWait)
	l := w.lanes.pick(req.ConversationID)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		view, err := w.readView(ctx, l, req)
		var rej *streams.RejectError
		switch {
		case errors.As(err, &rej):
		case errors.Is(err, streams.ErrUnknownConversation):
			rej = streams.RejectErr(streams.CodeNotFound, err)
		case err != nil:
			rej = streams.Reject(streams.CodeInternal, "reading the conversation: %v", err)
		}
		// A missing conversation or leaf may be an event not applied yet:
		// only a caught-up state settles it.
		if view.seq >= target || (err != nil && rej.Code == streams.CodeInternal) {
			return view, rej
		}
		if time.Now().After(deadline) {
			if rej != nil {
				return view, rej
			}
			w.cfg.logger.WarnContext(ctx, "inference on a conversation not caught up", "conversation", req.ConversationID,
				"applied", view.seq, "stored", target)
			return view, nil
		}
		select {
		case <-ctx.Done():
			return view, streams.Reject(streams.CodeInternal, "%v", ctx.Err())
		case <-time.After(pause):
		}
	}
}

// errNotHeld is returned by viewOnLane when the lane does not hold the
// conversation.
var errNotHeld = errors.New("streams: conversation not held")

// readView reads the flat list ending at the requested leaf (the active
// path when none) on the conversation's lane. A conversation the lane does
// not hold is loaded here first, off the lane, which goes on with its
// other conversations meanwhile.
func (w *Worker) readView(ctx context.Context, l *lane, req streams.InferenceRequest) (inferenceView, error) {
	view, lets, err := w.viewOnLane(ctx, l, req, nil, 0)
	if !errors.Is(err, errNotHeld) {
		return view, err
	}
	pre, err := w.loadForRead(ctx, req.ConversationID)
	if err != nil {
		return inferenceView{}, err
	}
	view, _, err = w.viewOnLane(ctx, l, req, pre, lets)
	return view, err
}

// viewOnLane reads, on lane l, the view of req from the lane's copy of the
// conversation, else from pre, a state loaded for the read when the lane
// counted lets states let go (see stateForRead); errNotHeld when there is
// neither, with the lane's count of states let go.
func (w *Worker) viewOnLane(ctx context.Context, l *lane, req streams.InferenceRequest, pre *convState, lets uint64) (inferenceView, uint64, error) {
	var view inferenceView
	var err error
	var seen uint64
	callErr := w.lanes.call(ctx, l, func() {
		st := w.stateForRead(l, req.ConversationID, pre, lets)
		if st == nil {
			seen, err = l.cache.lets, errNotHeld
			return
		}
		view.version, view.seq = st.version, st.seq
		var flat []*conversation.Message
		if req.LeafID == "" {
			if flat, err = st.conv.FlatList(); err != nil {
				return
			}
			l.cache.resize(st) // the walk of a compacted one rebuilt its index
		} else {
			var path []*conversation.Message
			if path, err = st.conv.PathTo(req.LeafID); err != nil {
				err = streams.RejectErr(streams.CodeNotFound, err)
				return
			}
			var res *conversation.Result
			if res, err = conversation.Parse(path, st.conv.Groups(), conversation.WithMaxMessages(w.cfg.limits.MaxMessages)); err != nil {
				return
			}
			flat = res.FlatList
		}
		// Messages are immutable and processors must not modify their
		// input, so the field maps are shared, not copied.
		view.messages = make([]enginecore.Message, len(flat))
		for i, m := range flat {
			view.messages[i] = m.Fields()
		}
	})
	if callErr != nil {
		// fn may still run later: do not read what it writes.
		return inferenceView{}, 0, callErr
	}
	return view, seen, err
}

// rejectInference reports a request that cannot be served: as the reply
// and on the errors subject.
func (w *Worker) rejectInference(ctx context.Context, r micro.Request, conv, requestID string, ev *event.Event, rej *streams.RejectError) {
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
	if err := w.reports.rejection(ctx, id, data); err != nil {
		w.cfg.logger.WarnContext(ctx, "inference rejection not published", "err", err)
	}
	w.reply(ctx, r, conv, id, streams.TypeEventRejected, data, "400", rej.Reason)
}

// respond replies with an event and publishes it on the results subject.
func (w *Worker) respond(ctx context.Context, r micro.Request, conv, id, typ string, data any, errCode, errText string) {
	if msg := w.encodeReply(ctx, r, conv, id, typ, data); msg != nil {
		w.respondMsg(ctx, r, msg, errCode, errText)
	}
}

// respondMsg replies with msg and publishes it on the results subject.
func (w *Worker) respondMsg(ctx context.Context, r micro.Request, msg *nats.Msg, errCode, errText string) {
	if !w.send(ctx, r, msg, errCode, errText) {
		return
	}
	if err := w.nc.PublishMsg(msg); err != nil {
		w.cfg.logger.WarnContext(ctx, "inference result not published", "subject", msg.Subject, "err", err)
	}
}

// reply sends the event as the reply, marked as a service error when
// errCode is set.
func (w *Worker) reply(ctx context.Context, r micro.Request, conv, id, typ string, data any, errCode, errText string) {
	if msg := w.encodeReply(ctx, r, conv, id, typ, data); msg != nil {
		w.send(ctx, r, msg, errCode, errText)
	}
}

// encodeReply encodes the event of a reply, addressed to the results
// subject. On failure it answers r with a bare service error and returns
// nil.
func (w *Worker) encodeReply(ctx context.Context, r micro.Request, conv, id, typ string, data any) *nats.Msg {
	ev, err := streams.NewEvent(id, typ, w.cfg.source, conv, data)
	if err == nil {
		streams.InjectTraceContext(ctx, ev)
	}
	var msg *nats.Msg
	if err == nil {
		msg, err = streams.EncodeEvent(w.cfg.subjects.Results(conv), ev, streams.Structured)
	}
	if err != nil {
		w.cfg.logger.ErrorContext(ctx, "inference reply not encoded", "type", typ, "err", err)
		_ = r.Error("500", "reply not encoded", nil)
		return nil
	}
	return msg
}

// send replies with msg, marked as a service error when errCode is set.
// A reply larger than the server takes is answered with a bare service
// error instead, and send returns false: msg cannot be published either.
func (w *Worker) send(ctx context.Context, r micro.Request, msg *nats.Msg, errCode, errText string) bool {
	if size, limit := replySize(msg, errCode, errText), int(w.nc.MaxPayload()); size > limit {
		w.cfg.logger.ErrorContext(ctx, "inference reply too large", "bytes", size, "max_payload", limit)
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
		w.cfg.logger.WarnContext(ctx, "inference reply not sent", "err", err)
	}
	return true
}
