package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestRequestAfterRejectedEvent: an inference or diagnosis request that
// follows an event the worker rejects is answered as soon as the rejection
// is settled, not at the end of the inference wait. The rejected event is
// removed from the stream, so the request stops waiting for it; reading
// the stream's last event once, before, made both requests wait the whole
// wait (20 s here).
func TestRequestAfterRejectedEvent(t *testing.T) {
	const wait = 20 * time.Second
	ns := natstest.StartServer(t, "")
	nc := natstest.Connect(t, ns)
	worker.StartWorker(t, nc, worker.WithPipelines(worker.SlimPipelines()), worker.WithInferenceWait(wait))
	c := natstest.NewClient(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Send(ctx, "after-rejected", streams.TypeMessageAppended, map[string]any{"id": "u1", "role": "user", "content": "hi"}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitCaughtUp(t, c, "after-rejected", 20*time.Second)

	for _, ask := range []struct {
		name string
		do   func() (string, error)
		want string
	}{
		{"infer", func() (string, error) {
			ev, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "after-rejected"})
			if err != nil {
				return "", err
			}
			return ev.Type(), nil
		}, streams.TypeInferenceContext},
		{"doctor", func() (string, error) {
			ev, err := c.Doctor(ctx, "after-rejected")
			if err != nil {
				return "", err
			}
			return ev.Type(), nil
		}, streams.TypeDoctorDiagnosis},
	} {
		// No id: rejected missing_id, and removed from the stream.
		if _, err := c.Send(ctx, "after-rejected", streams.TypeMessageAppended, map[string]any{"role": "user"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		typ, err := ask.do()
		took := time.Since(start)
		if err != nil || typ != ask.want {
			t.Fatalf("%s: %q, %v; want %s", ask.name, typ, err, ask.want)
		}
		t.Logf("%s after a rejected event: answered in %v", ask.name, took.Round(time.Millisecond))
		if took > wait/4 {
			t.Errorf("%s after a rejected event took %v: it waited for the rejected event (inference wait %v)", ask.name, took, wait)
		}
	}
}
