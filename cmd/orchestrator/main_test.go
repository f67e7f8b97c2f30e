package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams/natsembed"
)

// syncBuffer is a log sink safe for the orchestrator and the test at once.
type syncBuffer = natstest.SyncBuffer

// TestRun starts the orchestrator with a provider model whose key is in
// the environment, and checks that it runs, stops on its context, and
// writes the key nowhere; without a key it refuses to start, naming the
// variables.
func TestRun(t *testing.T) {
	ns := workertest.Server(t, natsembed.Config{})
	const key = "sk-do-not-print-me"
	env := map[string]string{"OPENAI_API_KEY": key}
	getenv := func(k string) string { return env[k] }
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--nats-url", ns.ClientURL(), "--model", "openai:gpt-test", "--log-level", "debug"}, getenv, &out)
	}()
	natstest.WaitFor(t, 30*time.Second, "the orchestrator to start", func() bool { return strings.Contains(out.String(), "taking reply requests") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), key) {
		t.Errorf("the key is in the log:\n%s", out.String())
	}
	err := run(context.Background(), []string{"--nats-url", ns.ClientURL(), "--model", "anthropic:claude"}, getenv, &out)
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("without a key: %v", err)
	}
}
