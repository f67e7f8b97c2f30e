package orchestrator

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
)

// The defaults of the options.
const (
	// DefaultConcurrency is how many replies are written at once.
	DefaultConcurrency = 16
	// DefaultConsumer names the durable consumer orchestrators share,
	// which the worker creates (streams.RepliesConsumer).
	DefaultConsumer = streams.RepliesConsumer
	// DefaultAckWait is how long a reply request stays with an
	// orchestrator that stopped reporting progress before another takes it
	// (and completes its placeholder as interrupted).
	DefaultAckWait = streams.DefaultRepliesAckWait
	// DefaultMaxDeliver bounds the deliveries of a reply request.
	DefaultMaxDeliver = streams.DefaultRepliesMaxDeliver
	// DefaultReplyTimeout bounds a whole reply.
	DefaultReplyTimeout = 10 * time.Minute
	// DefaultInferenceTimeout bounds the request for the context.
	DefaultInferenceTimeout = 30 * time.Second
	// DefaultKeepalive is how long a reply goes without a chunk while the
	// model is silent (a reasoning model's first token, a provider's
	// Retry-After) before an empty chunk tells the workers its writer is
	// alive: a third of the workers' default reply idle timeout
	// (worker.DefaultReplyIdleTimeout), so that a slow model is not taken
	// for a dead orchestrator (TestReplyKeepalive).
	DefaultKeepalive = 5 * time.Second
)

// Opener opens a model by name (models.Open with the orchestrator's
// settings).
type Opener func(name string) (models.Model, error)

type config struct {
	subjects         streams.Subjects
	model            models.Model
	open             Opener
	concurrency      int
	consumer         string
	ackWait          time.Duration
	maxDeliver       int
	replyTimeout     time.Duration
	inferenceTimeout time.Duration
	keepalive        time.Duration
	log              *slog.Logger
	tracer           trace.TracerProvider
	meter            metric.MeterProvider
	source           string
}

// Option configures an Orchestrator.
type Option func(*config)

// WithSubjects sets the subject prefix (default streams.DefaultPrefix).
func WithSubjects(s streams.Subjects) Option { return func(c *config) { c.subjects = s } }

// WithModel sets the model of requests that name none (required).
func WithModel(m models.Model) Option { return func(c *config) { c.model = m } }

// WithOpener lets requests name other models, opened by open (once each).
// Without it a request naming another model than the default is refused.
func WithOpener(open Opener) Option { return func(c *config) { c.open = open } }

// WithConcurrency sets how many replies are written at once (default
// DefaultConcurrency).
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithConsumer names the durable consumer (default DefaultConsumer). The
// worker creates DefaultConsumer, and the replies stream, a work queue,
// takes no second consumer without a filter: another name works only
// where DefaultConsumer is deleted, with credentials allowed to create it
// (streams.OrchestratorPermissions names DefaultConsumer).
func WithConsumer(name string) Option { return func(c *config) { c.consumer = name } }

// WithAckWait sets how long a silent orchestrator keeps a request
// (default DefaultAckWait).
func WithAckWait(d time.Duration) Option { return func(c *config) { c.ackWait = d } }

// WithMaxDeliver bounds a request's deliveries (default DefaultMaxDeliver).
func WithMaxDeliver(n int) Option { return func(c *config) { c.maxDeliver = n } }

// WithReplyTimeout bounds a whole reply (default DefaultReplyTimeout); a
// reply over it is completed as an error.
func WithReplyTimeout(d time.Duration) Option { return func(c *config) { c.replyTimeout = d } }

// WithKeepalive sets how long a reply goes without a chunk before an
// empty one is sent (default DefaultKeepalive; 0 sends none). Keep it
// below the workers' reply idle timeout.
func WithKeepalive(d time.Duration) Option { return func(c *config) { c.keepalive = d } }

// WithInferenceTimeout bounds the request for the context (default
// DefaultInferenceTimeout).
func WithInferenceTimeout(d time.Duration) Option { return func(c *config) { c.inferenceTimeout = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithTracerProvider sets where spans go.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tracer = tp } }

// WithMeterProvider sets where metrics go.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.meter = mp } }

func defaults() config {
	s, _ := streams.NewSubjects("")
	return config{subjects: s, concurrency: DefaultConcurrency, consumer: DefaultConsumer, ackWait: DefaultAckWait,
		maxDeliver: DefaultMaxDeliver, replyTimeout: DefaultReplyTimeout, inferenceTimeout: DefaultInferenceTimeout,
		keepalive: DefaultKeepalive,
		log:       slog.Default(), tracer: tracenoop.NewTracerProvider(), meter: metricnoop.NewMeterProvider(),
		source: "urn:convstream:orchestrator"}
}
