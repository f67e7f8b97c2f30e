package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// handle writes the reply a request asks for. A request that cannot be
// served is refused (a rejection on its conversation's errors subject) and
// terminated; every other ends acknowledged, its reply completed.
func (o *Orchestrator) handle(ctx context.Context, msg jetstream.Msg) {
	conv, ok := o.cfg.subjects.ConversationOf("replies", msg.Subject())
	if !ok {
		o.refuse(ctx, msg, streams.UnknownConversation, nil, streams.Reject(streams.CodeBadSubject, "subject %q names no valid conversation", msg.Subject()))
		return
	}
	ev, err := streams.DecodeEvent(msg.Headers(), msg.Data())
	if err != nil {
		o.refuse(ctx, msg, conv, nil, streams.RejectErr(streams.CodeNotCloudEvent, err))
		return
	}
	req, rej := decodeRequest(ev, conv)
	if rej != nil {
		o.refuse(ctx, msg, conv, ev, rej)
		return
	}
	model, err := o.model(req.Model)
	if err != nil {
		o.refuse(ctx, msg, conv, ev, streams.RejectAt(streams.CodeBadData, "data.model", "%v", err))
		return
	}
	ctx = streams.ExtractTraceContext(ctx, ev)
	ctx, span := o.tracer.Start(ctx, "reply "+conv, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.destination.name", msg.Subject()),
		attribute.String("messaging.message.id", ev.ID()),
		attribute.String("convstream.conversation_id", conv),
		attribute.String("gen_ai.request.model", model.Name()),
	))
	defer span.End()
	id := req.MessageID
	if id == "" {
		id = "reply-" + ev.ID()
	}
	span.SetAttributes(attribute.String("convstream.message_id", id))

	// Report progress while the reply is written: a silent orchestrator is
	// a dead one, whose request goes to another.
	beat, stopBeat := context.WithCancel(ctx)
	defer stopBeat()
	go func() {
		t := time.NewTicker(o.cfg.ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()

	if meta, err := msg.Metadata(); err == nil && meta.NumDelivered > 1 {
		if done := o.resume(ctx, conv, id); done {
			_ = msg.Ack()
			return
		}
	}
	status := o.write(ctx, conv, id, req, model)
	span.SetAttributes(attribute.String("convstream.stream_status", status))
	o.metrics.replies.Add(ctx, 1, metric.WithAttributes(attribute.String("convstream.stream_status", status)))
	if err := msg.Ack(); err != nil {
		o.cfg.log.WarnContext(ctx, "reply request not acknowledged", "conversation", conv, "err", err)
	}
}

// decodeRequest reads a reply request.
func decodeRequest(ev *event.Event, conv string) (*streams.ReplyRequest, *streams.RejectError) {
	if ev.Type() != streams.TypeReplyRequested {
		return nil, streams.Reject(streams.CodeUnknownType, "type %q: want %s", ev.Type(), streams.TypeReplyRequested)
	}
	var req streams.ReplyRequest
	if err := json.Unmarshal(ev.Data(), &req); err != nil {
		return nil, streams.RejectErr(streams.CodeBadData, err)
	}
	if req.ConversationID != conv {
		return nil, streams.RejectAt(streams.CodeBadConversation, "data.conversationId", "conversation %q on the subject of %q", req.ConversationID, conv)
	}
	return &req, nil
}

// refuse records why a request is not served and terminates it.
func (o *Orchestrator) refuse(ctx context.Context, msg jetstream.Msg, conv string, ev *event.Event, rej *streams.RejectError) {
	data := streams.EventRejected{Subject: msg.Subject(), Reason: rej.Reason, Code: rej.Code, Path: rej.Path, ConversationID: conv}
	id := "rejected:reply"
	if ev != nil {
		evID := ev.ID()
		data.EventID, data.Type, id = &evID, ev.Type(), "rejected:"+evID
	}
	out, err := o.client.Message(ctx, o.cfg.subjects.Errors(conv), streams.TypeEventRejected, conv, data, client.WithEventID(id))
	if err == nil {
		_, err = o.js.PublishMsg(ctx, out)
	}
	if err != nil {
		o.cfg.log.WarnContext(ctx, "reply refusal not recorded", "conversation", conv, "err", err)
	}
	o.cfg.log.InfoContext(ctx, "reply request refused", "conversation", conv, "code", rej.Code, "reason", rej.Reason)
	_ = msg.Term()
}

// resume decides a redelivered request: its orchestrator died. A reply
// still streaming is completed as interrupted with the text the stored
// snapshot holds, one already ended is left as it is; either way the
// request is done. A request whose reply was never started is written
// anew (done false).
func (o *Orchestrator) resume(ctx context.Context, conv, id string) (done bool) {
	s, err := o.client.Snapshot(ctx, conv)
	if err != nil {
		return false
	}
	var list []map[string]any
	if json.Unmarshal(s.FlatList, &list) != nil {
		return false
	}
	for _, m := range list {
		if m["id"] != id {
			continue
		}
		if m[streams.FieldStreamStatus] == streams.StreamStreaming {
			content, _ := m["content"].(string)
			if _, err := o.client.Complete(ctx, conv, streams.MessageCompleted{ID: id, Status: streams.StreamInterrupted, Content: content},
				client.WithEventID("reply-end:"+conv+":"+id)); err != nil {
				o.cfg.log.WarnContext(ctx, "interrupted reply not completed", "conversation", conv, "id", id, "err", err)
			}
		}
		return true
	}
	return false
}

// write writes the reply and returns its final status.
func (o *Orchestrator) write(ctx context.Context, conv, id string, req *streams.ReplyRequest, model models.Model) string {
	o.metrics.inFlight.Add(ctx, 1)
	defer o.metrics.inFlight.Add(context.WithoutCancel(ctx), -1)
	taken := time.Now()
	end := streams.MessageCompleted{ID: id, Status: streams.StreamDone}
	complete := func() string {
		if _, err := o.client.Complete(context.WithoutCancel(ctx), conv, end, client.WithEventID("reply-end:"+conv+":"+id)); err != nil {
			o.cfg.log.WarnContext(ctx, "reply not completed", "conversation", conv, "id", id, "err", err)
		}
		return end.Status
	}
	parent := req.ParentID
	if parent == "" {
		parent = req.UserMessageID
	}
	if parent == "" {
		parent = o.activeLeaf(ctx, conv)
	}
	placeholder := map[string]any{"id": id, "role": "assistant", "content": ""}
	if parent != "" {
		placeholder["parentId"] = parent
	}
	provider, modelName := splitModelName(model.Name())
	placeholder["model"], placeholder["provider"] = modelName, provider
	if _, err := o.client.StartReply(ctx, conv, placeholder, client.WithEventID("reply-start:"+conv+":"+id)); err != nil {
		o.cfg.log.WarnContext(ctx, "reply not started", "conversation", conv, "id", id, "err", err)
		end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(models.ErrAgentRuntime), Message: err.Error()}
		return complete()
	}

	// The context in the model's format, ending at the message replied to.
	ictx, cancel := context.WithTimeout(ctx, o.cfg.inferenceTimeout)
	reply, err := o.client.Infer(ictx, streams.InferenceRequest{ConversationID: conv, LeafID: parent, Pipeline: req.Pipeline,
		Params: req.Params, Format: string(model.Format())})
	cancel()
	var ic streams.InferenceContext
	switch {
	case err != nil:
		end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(models.ErrAgentRuntime), Code: "inference", Message: err.Error()}
	case reply.Type() != streams.TypeInferenceContext:
		var why struct{ Code, Reason, Message string }
		_ = json.Unmarshal(reply.Data(), &why)
		end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(models.ErrAgentRuntime), Code: why.Code, Message: why.Reason + why.Message}
	default:
		err = json.Unmarshal(reply.Data(), &ic)
		if err != nil {
			end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(models.ErrAgentRuntime), Code: "inference", Message: err.Error()}
		}
	}
	if end.Error != nil {
		return complete()
	}

	mctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	mctx, cancelTimeout := context.WithTimeoutCause(mctx, o.cfg.replyTimeout, fmt.Errorf("orchestrator: reply over %v", o.cfg.replyTimeout))
	defer cancelTimeout()
	defer o.register(conv, id, stop)()
	var first time.Time
	w := newWriter(context.WithoutCancel(mctx), id, o.cfg.keepalive, func(c context.Context, chunk streams.MessageChunk) error {
		_, err := o.client.SendChunk(c, conv, chunk)
		return err
	}, func(err error) { stop(fmt.Errorf("orchestrator: chunk not stored: %w", err)) })
	msgs := make([]map[string]any, len(ic.Messages))
	copy(msgs, ic.Messages)
	cctx, call := o.tracer.Start(mctx, "chat "+model.Name(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", modelName)))
	tools := make([]models.Tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = models.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	res, err := model.Stream(cctx, models.Request{Body: ic.Request, Messages: msgs, Tools: tools}, func(d models.Delta) error {
		if first.IsZero() {
			first = time.Now()
			o.metrics.ttft.Record(ctx, first.Sub(taken).Seconds(), metric.WithAttributes(attribute.String("gen_ai.request.model", model.Name())))
		}
		return w.add(d)
	})
	sendErr := w.close()
	end.Content, end.Tools = w.text.String(), w.tools
	if res != nil {
		end.Model, end.Provider, end.FinishReason = res.Model, res.Provider, res.FinishReason
		end.Usage = usageOf(res.Usage)
		end.Reasoning = reasoningOf(w.reasoning.String(), res)
		for i, sig := range res.ThoughtSignatures {
			if i < len(end.Tools) {
				end.Tools[i]["thoughtSignature"] = sig
			}
		}
		call.SetAttributes(attribute.String("gen_ai.response.model", res.Model))
		if u := res.Usage; u != nil {
			call.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens))
			if d := time.Since(first); !first.IsZero() && d > 0 && u.OutputTokens > 0 {
				o.metrics.tokensPerSecond.Record(ctx, float64(u.OutputTokens)/d.Seconds(), metric.WithAttributes(attribute.String("gen_ai.request.model", model.Name())))
			}
		}
	} else {
		end.Model, end.Provider = modelName, provider
		end.Reasoning = reasoningOf(w.reasoning.String(), nil)
	}
	if len(end.Tools) == 0 {
		end.Tools = nil
	}
	cause := context.Cause(mctx)
	switch {
	case err == nil && sendErr == nil:
	case errors.Is(cause, errStopped):
		end.Status = streams.StreamStopped
	case ctx.Err() != nil:
		// The orchestrator is stopping: the reply ends with what was written.
		end.Status = streams.StreamInterrupted
	case sendErr != nil:
		end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(models.ErrAgentRuntime), Code: "chunk", Message: sendErr.Error()}
	default:
		if err == nil || mctx.Err() != nil {
			err = cause
		}
		e := models.AsError(err)
		end.Status, end.Error = streams.StreamError, &streams.MessageError{Type: string(e.Type), Message: e.Message, Code: e.Code}
		o.metrics.providerError(ctx, model.Name(), string(e.Type), e.Code)
		call.RecordError(err)
		call.SetStatus(codes.Error, e.Error())
	}
	call.End()
	return complete()
}

// activeLeaf returns the last message of a conversation's active path, as
// its stored snapshot shows it; "" when there is none.
func (o *Orchestrator) activeLeaf(ctx context.Context, conv string) string {
	s, err := o.client.Snapshot(ctx, conv)
	if err != nil {
		return ""
	}
	var list []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(s.FlatList, &list) != nil || len(list) == 0 {
		return ""
	}
	return list[len(list)-1].ID
}

// splitModelName returns the provider and model of a model name:
// "openai:gpt-4.1" is openai and gpt-4.1, "builtin" is builtin twice.
func splitModelName(name string) (provider, model string) {
	for i := 0; i < len(name); i++ {
		if name[i] == ':' {
			return name[:i], name[i+1:]
		}
	}
	return name, name
}

// usageOf returns usage under LobeHub's names for it (ModelUsage).
func usageOf(u *models.Usage) map[string]any {
	if u == nil {
		return nil
	}
	m := map[string]any{"totalInputTokens": u.InputTokens, "totalOutputTokens": u.OutputTokens, "totalTokens": u.TotalTokens}
	if u.ReasoningTokens > 0 {
		m["outputReasoningTokens"] = u.ReasoningTokens
	}
	if u.CachedTokens > 0 {
		m["inputCachedTokens"] = u.CachedTokens
	}
	return m
}

// reasoningOf returns the reply's reasoning field: its text, signature and
// the provider fields a later request must carry back (docs/events.md,
// "Provider fields"); nil when there is none of them.
func reasoningOf(text string, res *models.Result) map[string]any {
	r := map[string]any{}
	if text != "" {
		r["content"] = text
	}
	if res != nil {
		if res.ReasoningSignature != "" {
			r["signature"] = res.ReasoningSignature
		}
		if len(res.ProviderFields) > 0 {
			pf := map[string]any{"provider": res.Provider, "model": res.Model}
			for k, v := range res.ProviderFields {
				pf[k] = v
			}
			r["providerFields"] = pf
		}
	}
	if len(r) == 0 {
		return nil
	}
	return r
}
