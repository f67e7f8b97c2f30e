package main

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams/orchestrator"
)

// TestChat: convctl chat sends the user's message, prints the built-in
// model's reply and exits 0; a second message follows the first reply; a
// refused request (a model the orchestrator lacks) exits 1, saying why.
func TestChat(t *testing.T) {
	run := workertest.Start(t)
	t.Setenv("CONVSTREAM_NATS_URL", run.URL)
	nc, err := nats.Connect(run.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m, err := models.NewBuiltin(models.BuiltinConfig{Tokens: 20, TokensPerChunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(nc, orchestrator.WithModel(m))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	defer func() { cancel(); <-done }()

	code, out, errOut := convctl(t, "", "chat", "chat-1", "hello")
	if code != 0 || !strings.HasPrefix(out, `You said "hello". `) || !strings.HasSuffix(out, ".\n") {
		t.Fatalf("chat: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = convctl(t, "", "chat", "chat-1", "and then?")
	if code != 0 || !strings.HasPrefix(out, `You said "and then?". `) {
		t.Fatalf("second chat: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = convctl(t, "", "chat", "--model", "openai:gpt-x", "chat-2", "hi")
	if code != 1 || !strings.Contains(errOut, "refused: bad_data") {
		t.Errorf("a model the orchestrator lacks: %d\n%s", code, errOut)
	}
	code, out, _ = convctl(t, "", "watch", "--once", "--flat", "chat-1")
	if code != 0 || strings.Count(out, `"role":"user"`) != 2 || strings.Count(out, `"streamStatus":"done"`) != 2 {
		t.Errorf("the conversation's active path: %s", out)
	}
}
