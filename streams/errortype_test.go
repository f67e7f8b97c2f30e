package streams

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type codedError struct{}

func (codedError) Error() string { return "coded" }

func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Reject(CodeNotFound, "no message %q", "x"), string(CodeNotFound)},
		{fmt.Errorf("streams: send: %w", jetstream.ErrNoStreamResponse), "no_stream_response"},
		{fmt.Errorf("streams: inference request: %w", nats.ErrNoResponders), "no_responders"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", codedError{})), "streams.codedError"},
		{errors.New("plain"), "*errors.errorString"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
