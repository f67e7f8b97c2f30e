package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// InstrumentationName names the orchestrator's tracer and meter.
const InstrumentationName = "github.com/convstream/convstream/streams/orchestrator"

// errStopped is the cause of a reply's cancellation by a stop request.
var errStopped = errors.New("orchestrator: stopped by a client")

// Orchestrator takes reply requests and writes the replies.
type Orchestrator struct {
	cfg     config
	nc      *nats.Conn
	js      jetstream.JetStream
	client  *client.Client
	tracer  trace.Tracer
	metrics *instruments
	taking  atomic.Bool // Run takes requests (Ready)

	mu      sync.Mutex
	models  map[string]models.Model
	running map[string]context.CancelCauseFunc // by conversation and message id
}

// New returns an orchestrator over nc.
func New(nc *nats.Conn, opts ...Option) (*Orchestrator, error) {
	cfg := defaults()
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.model == nil {
		return nil, fmt.Errorf("%w: orchestrator: no model (WithModel)", streams.ErrInvalidConfig)
	}
	if cfg.concurrency < 1 || cfg.maxDeliver < 2 || cfg.ackWait < time.Second || cfg.replyTimeout <= 0 || cfg.inferenceTimeout <= 0 {
		return nil, fmt.Errorf("%w: orchestrator: concurrency %d (want ≥ 1), max deliver %d (want ≥ 2: a redelivery ends a dead orchestrator's reply), ack wait %v (want ≥ 1s), reply timeout %v, inference timeout %v (want > 0)",
			streams.ErrInvalidConfig, cfg.concurrency, cfg.maxDeliver, cfg.ackWait, cfg.replyTimeout, cfg.inferenceTimeout)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	c, err := client.New(nc, client.WithSubjects(cfg.subjects), client.WithSource(cfg.source), client.WithTracerProvider(cfg.tracer))
	if err != nil {
		return nil, err
	}
	ins, err := newInstruments(cfg.meter)
	if err != nil {
		return nil, err
	}
	return &Orchestrator{cfg: cfg, nc: nc, js: js, client: c, tracer: cfg.tracer.Tracer(InstrumentationName), metrics: ins,
		models: map[string]models.Model{}, running: map[string]context.CancelCauseFunc{}}, nil
}

// Provision creates the replies stream, a work queue
// (streams.RepliesStreamConfig), unless it exists. A worker creates it
// when it starts; Run calls Provision only where none did.
func Provision(ctx context.Context, js jetstream.JetStream, s streams.Subjects) (jetstream.Stream, error) {
	st, err := js.CreateOrUpdateStream(ctx, streams.RepliesStreamConfig(s))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: replies stream: %w", err)
	}
	return st, nil
}

// repliesStream returns the replies stream: looked up, since a worker
// creates it and the orchestrator role may not (streams.OrchestratorPermissions),
// and created only when missing.
func repliesStream(ctx context.Context, js jetstream.JetStream, s streams.Subjects) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, s.RepliesStream())
	switch {
	case err == nil:
		return st, nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("orchestrator: replies stream %s: %w", s.RepliesStream(), err)
	}
	st, err = Provision(ctx, js, s)
	if err != nil {
		return nil, fmt.Errorf("%w (a worker of prefix %q creates it when it starts)", err, s.Prefix())
	}
	return st, nil
}

// Run takes reply requests until ctx ends, then waits for the replies in
// progress (which end as interrupted when ctx's end cancels them).
func (o *Orchestrator) Run(ctx context.Context) error {
	st, err := repliesStream(ctx, o.js, o.cfg.subjects)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	// The worker created it (with the defaults); this sets the
	// orchestrator's own ack wait and deliveries.
	cons, err := st.CreateOrUpdateConsumer(ctx, streams.RepliesConsumerConfig(o.cfg.consumer, o.cfg.ackWait, o.cfg.maxDeliver))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if streams.IsRepliesConsumerTaken(err) {
			return fmt.Errorf("orchestrator: replies consumer %s: the replies stream, a work queue, has another consumer, which takes its requests (the worker creates %s): use that one, or delete it: %w",
				o.cfg.consumer, streams.RepliesConsumer, err)
		}
		return fmt.Errorf("orchestrator: replies consumer %s: %w", o.cfg.consumer, err)
	}
	stops, err := o.nc.Subscribe(o.cfg.subjects.AllStop(), o.serveStop)
	if err != nil {
		return fmt.Errorf("orchestrator: stop subscription: %w", err)
	}
	defer func() { _ = stops.Unsubscribe() }()
	o.taking.Store(true)
	defer o.taking.Store(false)
	o.cfg.log.Info("taking reply requests", "stream", o.cfg.subjects.RepliesStream(), "consumer", o.cfg.consumer, "model", o.cfg.model.Name())
	sem := make(chan struct{}, o.cfg.concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// A slot first, then one request: a request is taken only when it
		// can be written at once, never held in a buffer where its ack wait
		// would run out (and another orchestrator write it again), and a
		// busy orchestrator leaves requests to the others.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		msg, err := o.next(ctx, cons)
		if err != nil {
			<-sem
			if ctx.Err() != nil {
				return nil
			}
			o.cfg.log.Warn("reply requests", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if msg == nil {
			<-sem
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			o.handle(ctx, msg)
		}()
	}
}

// pullWait bounds one pull for a request: an empty pull is asked again.
const pullWait = 5 * time.Second

// next returns the next request, or nil when none came within pullWait.
func (o *Orchestrator) next(ctx context.Context, cons jetstream.Consumer) (jetstream.Msg, error) {
	// The pull ends with ctx: Fetch has no context, so a shorter wait
	// keeps a stop prompt.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(pullWait))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case msg, ok := <-batch.Messages():
			if !ok {
				if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
					return nil, err
				}
				return nil, nil
			}
			return msg, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// model returns the model a request names.
func (o *Orchestrator) model(name string) (models.Model, error) {
	if name == "" || name == o.cfg.model.Name() {
		return o.cfg.model, nil
	}
	if o.cfg.open == nil {
		return nil, fmt.Errorf("model %q: this orchestrator writes with %s only", name, o.cfg.model.Name())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if m, ok := o.models[name]; ok {
		return m, nil
	}
	m, err := o.cfg.open(name)
	if err != nil {
		return nil, err
	}
	o.models[name] = m
	return m, nil
}

// register records the cancel of a reply in progress, for stops.
func (o *Orchestrator) register(conv, id string, cancel context.CancelCauseFunc) func() {
	key := conv + "/" + id
	o.mu.Lock()
	o.running[key] = cancel
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(o.running, key)
		o.mu.Unlock()
	}
}

// serveStop cancels the reply a stop request names when this orchestrator
// writes it, and answers; it leaves a stop of another's reply unanswered.
func (o *Orchestrator) serveStop(m *nats.Msg) {
	conv, ok := o.cfg.subjects.ConversationOf("stop", m.Subject)
	if !ok {
		return
	}
	ev, err := streams.DecodeEvent(m.Header, m.Data)
	if err != nil || ev.Type() != streams.TypeReplyStop {
		return
	}
	var stop streams.ReplyStop
	if ev.DataAs(&stop) != nil || stop.ID == "" {
		return
	}
	o.mu.Lock()
	cancel := o.running[conv+"/"+stop.ID]
	o.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel(errStopped)
	// Answered only into this connection's inbox, where the clients of its
	// tenant receive theirs (streams.Answerable).
	if !streams.Answerable(m.Reply, streams.ConnInbox(o.nc)) {
		return
	}
	reply, err := streams.NewEvent("stopped:"+ev.ID(), streams.TypeReplyStop, o.cfg.source, conv, stop)
	if err != nil {
		return
	}
	if out, err := streams.EncodeEvent(m.Reply, reply, streams.Structured); err == nil {
		_ = o.nc.PublishMsg(out)
	}
}
