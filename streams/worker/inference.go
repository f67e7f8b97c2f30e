package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/streams"
)

// InferenceService is the name of the NATS micro service answering
// inference requests (discoverable with `nats micro ls`).
const InferenceService = "convstream-inference"

// inferenceServer answers inference and doctor requests: the NATS micro
// service on their subjects, which reads a conversation through the
// worker (lastStored, read), runs it through a pipeline, writes the model
// request, replies and publishes the result or a rejection. It owns its
// service, its limits and its token counters. Requests are handled
// concurrently, as admission allows (inference_admission.go); those it refuses are
// answered busy (inference_reply.go).
type inferenceServer struct {
	nc       *nats.Conn
	subjects streams.Subjects
	// queueGroup is the service's queue group, the worker's consumer
	// name: the workers of one deployment share its requests.
	queueGroup string
	// misdirected paces the warning of a request whose reply subject is
	// outside the inbox prefix of nc, the only one it answers into
	// (streams.Answerable).
	misdirected rate.Sometimes
	source      string // the CloudEvents source of the replies
	log         *slog.Logger
	tracer      trace.Tracer
	metrics     *instruments
	reports     *reports // rejections and failures, kept in the errors stream
	pipelines   Pipelines
	// timeout bounds a pipeline run (WithInferenceTimeout); wait, how long
	// a request waits for the events stored before it (WithInferenceWait).
	timeout, wait time.Duration
	// admission bounds the requests served at once and waiting
	// (WithInferenceWorkers, WithInferenceQueue, WithInferenceQueueWait).
	admission *admission
	// runLimits bound a pipeline run (WithInferenceLimits); maxMessages, a
	// walk of the conversation (Limits.MaxMessages).
	runLimits   enginecore.Limits
	maxMessages int

	// lastStored returns the stream sequence of the last event of a
	// conversation, what a read waits to see applied (Worker.lastStoredSeq);
	// read runs fn on the conversation's state on its lane
	// (Worker.readOnLane).
	lastStored func(ctx context.Context, id string) uint64
	read       func(ctx context.Context, id string, fn func(st *convState) (resized bool)) error

	// tokens holds the exact token counters budgets asked for.
	tokens tokenCounters

	svc micro.Service
	wg  sync.WaitGroup

	mu     sync.Mutex // orders wg.Add before stop's wg.Wait
	closed bool
}

// start adds the service and its endpoints; requests are served under
// ctx.
func (s *inferenceServer) start(ctx context.Context) error {
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        InferenceService,
		Version:     "1.0.0",
		Description: "convstream: the context of a conversation, prepared by a pipeline, for a model call",
		QueueGroup:  s.queueGroup,
	})
	if err != nil {
		return fmt.Errorf("worker: inference service: %w", err)
	}
	handler := func(kind string, serve func(context.Context, micro.Request)) micro.Handler {
		return micro.HandlerFunc(func(r micro.Request) {
			if !streams.Answerable(r.Reply(), streams.ConnInbox(s.nc)) {
				s.misdirect(ctx, kind, r)
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				_ = r.Error("503", "worker shutting down", nil)
				return
			}
			s.wg.Add(1)
			s.mu.Unlock()
			s.admission.admit(ctx,
				func() { serve(ctx, r) },
				func(why string) { s.refuseBusy(ctx, r, kind, why) },
				s.wg.Done)
		})
	}
	if err := svc.AddEndpoint("inference", handler("inference", s.serveInference), micro.WithEndpointSubject(s.subjects.AllInference())); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("worker: inference endpoint: %w", err)
	}
	if err := svc.AddEndpoint("doctor", handler("doctor", s.serveDoctor), micro.WithEndpointSubject(s.subjects.AllDoctor())); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("worker: doctor endpoint: %w", err)
	}
	s.svc = svc
	return nil
}

// stop unsubscribes and waits for requests in progress.
func (s *inferenceServer) stop() {
	if s == nil || s.svc == nil {
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
func (s *inferenceServer) serveInference(ctx context.Context, r micro.Request) {
	start := time.Now()
	ctx, span, q := s.startRequest(ctx, r, "inference")
	defer span.End()
	conv, convOK, ev, decErr, requestID := q.conv, q.convOK, q.ev, q.decErr, q.id

	outcome := "context"
	errType := "_OTHER" // error.type of a failure: the rejection's or failure's code
	defer func() {
		span.SetAttributes(attribute.String("convstream.outcome", outcome))
		if outcome != "context" {
			span.SetAttributes(attribute.String("error.type", errType))
		}
		byOutcome := metric.WithAttributes(attribute.String("outcome", outcome))
		s.metrics.inferences.Add(ctx, 1, byOutcome)
		s.metrics.inferenceDuration.Record(ctx, time.Since(start).Seconds(), byOutcome)
	}()

	req, rej := inferenceRequest(conv, convOK, ev, decErr)
	var view inferenceView
	var eng *enginecore.Engine
	if rej == nil {
		span.SetAttributes(attribute.String("convstream.pipeline", req.Pipeline), attribute.String("convstream.leaf_id", req.LeafID))
		view, rej = s.inferenceInput(ctx, req)
	}
	if rej == nil {
		var err error
		eng, err = s.pipelines.Pipeline(ctx, req.Pipeline, req.Params,
			enginecore.WithObserver(processorObserver{tracer: s.tracer, ins: s.metrics}),
			enginecore.WithLogger(s.log),
			enginecore.WithLimits(s.runLimits))
		switch {
		case errors.Is(err, streams.ErrUnknownPipeline):
			rej = streams.RejectErr(streams.CodeUnknownPipeline, err)
		case err != nil:
			rej = streams.Reject(streams.CodeBadData, "pipeline %q: %v", req.Pipeline, err)
		}
	}
	if rej != nil {
		outcome, errType = "rejected", string(rej.Code)
		span.SetStatus(codes.Error, rej.Error())
		s.rejectInference(ctx, r, conv, requestID, ev, rej)
		return
	}

	runCtx, cancel := context.WithTimeout(ctx, s.timeout)
	res, err := eng.Process(runCtx, view.messages)
	cancel()
	s.metrics.pipelineDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(
		attribute.String("pipeline", req.Pipeline), attribute.Bool("error", err != nil)))
	if err != nil {
		outcome = "failed"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		failed := pipelineFailure(requestID, conv, req.Pipeline, err)
		errType = string(failed.Code)
		s.log.WarnContext(ctx, "pipeline failed", "conversation", conv, "pipeline", req.Pipeline,
			"processor", failed.Processor, "code", failed.Code, "err", err)
		s.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		s.reports.failure(ctx, "failed:"+requestID, failed)
		return
	}
	built, err := s.modelRequest(res.Messages, view.messages, req)
	if err != nil {
		outcome = "failed"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		failed := formatFailure(requestID, conv, req.Pipeline, err)
		errType = string(failed.Code)
		s.log.WarnContext(ctx, "inference context not written", "conversation", conv, "format", req.Format, "code", failed.Code, "err", err)
		s.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		s.reports.failure(ctx, "failed:"+requestID, failed)
		return
	}
	out := streams.InferenceContext{
		RequestID:      requestID,
		ConversationID: conv,
		Messages:       built.Messages,
		Format:         string(built.Format),
		Request:        built.Body,
		Usage:          built.Usage,
		Warnings:       built.Warnings,
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
	if n := len(built.Warnings); n > 0 {
		s.metrics.inferenceWarnings.Add(ctx, int64(n), metric.WithAttributes(attribute.String("format", out.Format)))
		s.log.WarnContext(ctx, "inference context lost part of the conversation", "conversation", conv, "format", out.Format, "warning", built.Warnings[0], "warnings", n)
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	msg := s.encodeReply(ctx, r, conv, "context:"+requestID, streams.TypeInferenceContext, out)
	if msg == nil {
		outcome = "failed"
		return
	}
	// A context the server would refuse must still be answered: nats.go
	// refuses the reply before it is sent, and micro hands that back as a
	// respond error, so without this check the requester heard nothing
	// (TestInferenceTooLarge).
	if size, limit := replySize(msg, "", ""), int(s.nc.MaxPayload()); size > limit {
		outcome = "failed"
		failed := tooLargeFailure(out, size, limit)
		errType = string(failed.Code)
		span.SetStatus(codes.Error, failed.Message)
		s.log.WarnContext(ctx, "inference context too large for a reply", "conversation", conv, "pipeline", req.Pipeline,
			"bytes", size, "max_payload", limit)
		s.respond(ctx, r, conv, "failed:"+requestID, streams.TypePipelineFailed, failed, "500", failed.Message)
		return
	}
	s.respondMsg(ctx, r, msg, "", "")
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
func (s *inferenceServer) startRequest(ctx context.Context, r micro.Request, kind string) (context.Context, trace.Span, request) {
	var q request
	q.conv, q.convOK = s.subjects.ConversationOf(kind, r.Subject())
	h := nats.Header(r.Headers())
	q.ev, q.decErr = streams.DecodeEvent(h, r.Data())
	q.id = h.Get(jetstream.MsgIDHeader)
	if q.ev != nil {
		q.id = q.ev.ID()
		ctx = streams.ExtractTraceContext(ctx, q.ev)
	}
	ctx, span := s.tracer.Start(ctx, kind, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", "process"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.consumer.group.name", s.queueGroup),
			// The subject the service subscribed to, not the request's:
			// one name per endpoint, not one per conversation (semconv:
			// a destination name of low cardinality, the template beside).
			attribute.String("messaging.destination.name", s.subjects.Prefix()+"."+kind+".*"),
			attribute.String("messaging.destination.template", s.subjects.Prefix()+"."+kind+".{conversation_id}"),
			attribute.String("messaging.message.id", q.id),
			attribute.String("convstream.conversation_id", q.conv),
		))
	return ctx, span, q
}

// inferenceRequest checks a request against the contract.
func inferenceRequest(conv string, convOK bool, ev *event.Event, decErr error) (streams.InferenceRequest, *streams.RejectError) {
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
func (s *inferenceServer) inferenceInput(ctx context.Context, req streams.InferenceRequest) (inferenceView, *streams.RejectError) {
	var view inferenceView
	var rej *streams.RejectError
	caught, err := s.awaitCaughtUp(ctx, req.ConversationID, func() (uint64, bool) {
		v, err := s.readView(ctx, req)
		view, rej = v, nil
		switch {
		case errors.As(err, &rej):
		case errors.Is(err, streams.ErrUnknownConversation):
			rej = streams.RejectErr(streams.CodeNotFound, err)
		case err != nil:
			rej = streams.Reject(streams.CodeInternal, "reading the conversation: %v", err)
			return view.seq, true
		}
		// A missing conversation or leaf may be an event not applied yet:
		// only a caught-up state settles it.
		return view.seq, false
	})
	if err != nil {
		return view, streams.Reject(streams.CodeInternal, "%v", err)
	}
	if !caught && rej == nil {
		s.log.WarnContext(ctx, "inference on a conversation not caught up", "conversation", req.ConversationID,
			"applied", view.seq)
	}
	return view, rej
}

// readView reads the flat list ending at the requested leaf (the active
// path when none) on the conversation's lane; a conversation the lane does
// not hold is loaded first, off the lane (Worker.readOnLane).
func (s *inferenceServer) readView(ctx context.Context, req streams.InferenceRequest) (inferenceView, error) {
	var view inferenceView
	var err error
	readErr := s.read(ctx, req.ConversationID, func(st *convState) (resized bool) {
		view.version, view.seq = st.version, st.seq
		var flat []*conversation.Message
		if req.LeafID == "" {
			if flat, err = st.conv.FlatList(); err != nil {
				return false
			}
			resized = true // the walk of a compacted one rebuilt its index
		} else {
			var path []*conversation.Message
			if path, err = st.conv.PathTo(req.LeafID); err != nil {
				err = streams.RejectErr(streams.CodeNotFound, err)
				return false
			}
			var res *conversation.Result
			if res, err = conversation.Parse(path, st.conv.Groups(), conversation.WithMaxMessages(s.maxMessages)); err != nil {
				return false
			}
			flat = res.FlatList
		}
		// Messages are immutable and processors must not modify their
		// input, so the field maps are shared, not copied.
		view.messages = make([]enginecore.Message, len(flat))
		for i, m := range flat {
			view.messages[i] = m.Fields()
		}
		return resized
	})
	if readErr != nil {
		// fn may still run later: do not read what it writes.
		return inferenceView{}, readErr
	}
	return view, err
}

// DefaultPipeline is the pipeline spec run when a request names none.
const DefaultPipeline = "default"

// Pipelines builds the engine of a named pipeline spec. params are the
// request's per-processor configuration overrides (nil when none); opts
// must be passed on to the engine (they carry the worker's observer).
// An unknown name should be reported by wrapping ErrUnknownPipeline; any
// error is returned to the requester as a rejection.
type Pipelines interface {
	Pipeline(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error)
}

// PipelinesFunc adapts a function to Pipelines.
type PipelinesFunc func(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error)

// Pipeline calls f.
func (f PipelinesFunc) Pipeline(ctx context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
	return f(ctx, name, params, opts...)
}
