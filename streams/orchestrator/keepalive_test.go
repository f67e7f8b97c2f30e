package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
)

// thinking is a model silent for a while before its first token, as a
// reasoning model or a provider's Retry-After makes it.
type thinking struct {
	models.Model
	silent time.Duration
}

func (m thinking) Stream(ctx context.Context, req models.Request, emit func(models.Delta) error) (*models.Result, error) {
	select {
	case <-time.After(m.silent):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.Model.Stream(ctx, req, emit)
}

// TestReplyKeepalive: a model silent for three times the workers' reply
// idle timeout before its first token still ends its reply done, since
// the orchestrator's empty chunks keep it alive; without them the workers
// take the silence for a dead orchestrator and end it interrupted.
func TestReplyKeepalive(t *testing.T) {
	const idle = time.Second
	for _, tc := range []struct {
		name      string
		keepalive time.Duration
		want      string
	}{
		{"keepalive", idle / 4, streams.StreamDone},
		{"none", 0, streams.StreamInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := setup(t, worker.WithReplyIdleTimeout(idle))
			model := thinking{Model: builtin(t, models.BuiltinConfig{Tokens: 5, TokensPerChunk: 1}), silent: 3 * idle}
			runOrchestrator(t, r.URL, orchestrator.WithModel(model), orchestrator.WithKeepalive(tc.keepalive))
			ask(t, c, "chat-k", "think first", streams.ReplyRequest{MessageID: "a1"})
			if m := waitEnded(t, c, "chat-k", "a1"); m[streams.FieldStreamStatus] != tc.want {
				t.Fatalf("reply %v, want it %s", m, tc.want)
			}
		})
	}
}
