package cliflags

import (
	"flag"
	"time"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams/orchestrator"
)

// Orchestrator holds the flags of a reply orchestrator, shared by
// cmd/orchestrator and cmd/worker --orchestrator. Keys are never flags:
// models.Open reads them from the environment or a file.
type Orchestrator struct {
	Model        string
	Concurrency  int
	Consumer     string
	AckWait      time.Duration
	ReplyTimeout time.Duration
	Builtin      models.BuiltinConfig
	Retry        models.Retry
}

// Register adds the flags to fs, named with prefix ("" or
// "orchestrator-"), each with its environment variable.
func (o *Orchestrator) Register(fs *flag.FlagSet, env *Env, prefix, modelDefault, modelUsage string) {
	bind := func(name, variable string) { env.Bind(prefix+name, variable) }
	if prefix == "" {
		fs.StringVar(&o.Model, "model", modelDefault, modelUsage)
		bind("model", "CONVSTREAM_MODEL")
	} else {
		fs.StringVar(&o.Model, "orchestrator", modelDefault, modelUsage)
		env.Bind("orchestrator", "CONVSTREAM_ORCHESTRATOR")
	}
	fs.IntVar(&o.Concurrency, prefix+"concurrency", orchestrator.DefaultConcurrency, "replies written at once")
	bind("concurrency", "CONVSTREAM_ORCHESTRATOR_CONCURRENCY")
	fs.StringVar(&o.Consumer, prefix+"consumer", orchestrator.DefaultConsumer, "durable consumer of the replies stream; orchestrators sharing it share the requests. The worker creates convstream-orchestrator, and the stream, a work queue, takes no second consumer: another name needs that one deleted, and credentials allowed to create consumers")
	bind("consumer", "CONVSTREAM_ORCHESTRATOR_CONSUMER")
	fs.DurationVar(&o.AckWait, prefix+"ack-wait", orchestrator.DefaultAckWait, "how long a request stays with a silent (dead) orchestrator before another takes it and ends its reply as interrupted")
	bind("ack-wait", "CONVSTREAM_ORCHESTRATOR_ACK_WAIT")
	fs.DurationVar(&o.ReplyTimeout, prefix+"reply-timeout", orchestrator.DefaultReplyTimeout, "longest reply; one over it ends as an error")
	bind("reply-timeout", "CONVSTREAM_ORCHESTRATOR_REPLY_TIMEOUT")
	fs.IntVar(&o.Builtin.Tokens, prefix+"builtin-tokens", models.DefaultBuiltinTokens, "length of the built-in model's replies, in tokens")
	bind("builtin-tokens", "CONVSTREAM_BUILTIN_TOKENS")
	fs.Float64Var(&o.Builtin.Rate, prefix+"builtin-rate", models.DefaultBuiltinRate, "tokens a second the built-in model writes (0: as fast as it can)")
	bind("builtin-rate", "CONVSTREAM_BUILTIN_RATE")
	fs.IntVar(&o.Builtin.TokensPerChunk, prefix+"builtin-tokens-per-chunk", models.DefaultBuiltinTokensPerChunk, "tokens in each delta of the built-in model")
	bind("builtin-tokens-per-chunk", "CONVSTREAM_BUILTIN_TOKENS_PER_CHUNK")
	fs.IntVar(&o.Retry.Retries, prefix+"model-retries", models.DefaultRetries, "times a call a provider refused with 429 or 5xx is tried again (0: never)")
	bind("model-retries", "CONVSTREAM_MODEL_RETRIES")
	fs.DurationVar(&o.Retry.MaxRetryAfter, prefix+"model-max-retry-after", models.DefaultMaxRetryAfter, "longest Retry-After of a 429 or 5xx that is waited out before a retry; a provider asking for longer fails the reply at once")
	bind("model-max-retry-after", "CONVSTREAM_MODEL_MAX_RETRY_AFTER")
	o.Retry.Delay, o.Retry.MaxDelay = models.DefaultRetryDelay, models.DefaultRetryMaxDelay
}

// Open opens the default model and returns the orchestrator's options
// for it, with an opener of the other models a request may name.
func (o *Orchestrator) Open(getenv func(string) string) ([]orchestrator.Option, error) {
	mopts := []models.Option{models.WithGetenv(getenv), models.WithRetry(o.Retry), models.WithBuiltin(o.Builtin)}
	m, err := models.Open(o.Model, mopts...)
	if err != nil {
		return nil, err
	}
	return []orchestrator.Option{
		orchestrator.WithModel(m),
		orchestrator.WithOpener(func(name string) (models.Model, error) { return models.Open(name, mopts...) }),
		orchestrator.WithConcurrency(o.Concurrency),
		orchestrator.WithConsumer(o.Consumer),
		orchestrator.WithAckWait(o.AckWait),
		orchestrator.WithReplyTimeout(o.ReplyTimeout),
	}, nil
}
