package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
)

// bench1716 is the default pipeline's output for conversation-1716's
// active path, as the worker would answer an inference request.
func bench1716(b testing.TB) []enginecore.Message {
	type benchCase struct {
		Input struct {
			Messages      json.RawMessage `json:"messages"`
			MessageGroups json.RawMessage `json:"messageGroups"`
		} `json:"input"`
	}
	cases, err := testcorpus.Decode[benchCase]("../conversation/testdata/bench/conversation-1716.jsonl.gz")
	if err != nil || len(cases) == 0 {
		b.Fatalf("bench input: %v", err)
	}
	doc, _ := json.Marshal(map[string]any{"messages": cases[0].Input.Messages, "messageGroups": cases[0].Input.MessageGroups})
	msgs, groups, err := conversation.DecodeInput(bytes.NewReader(doc))
	if err != nil {
		b.Fatal(err)
	}
	parsed, err := conversation.Parse(msgs, groups)
	if err != nil {
		b.Fatal(err)
	}
	flat := make([]enginecore.Message, len(parsed.FlatList))
	for i, m := range parsed.FlatList {
		flat[i] = m.Fields()
	}
	engine, err := processors.Default().Build(processors.DefaultSpec())
	if err != nil {
		b.Fatal(err)
	}
	res, err := engine.Process(context.Background(), flat)
	if err != nil {
		b.Fatal(err)
	}
	return res.Messages
}

// BenchmarkBuild times each format, and the token budget with the
// estimator and with exact o200k_base counting, over conversation-1716's
// pipeline output (the pipeline itself: BenchmarkDefaultPipeline in
// processors).
func BenchmarkBuild(b *testing.B) {
	msgs := bench1716(b)
	exact, err := bpe.New("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	budget := providers.Budget{MaxTokens: 8000, Reserve: 1000, KeepTurns: 2}
	exactBudget := budget
	exactBudget.Counter = exact
	for _, bc := range []struct {
		name string
		f    providers.Format
		opts []providers.Option
	}{
		{"openai.chat", providers.FormatOpenAIChat, nil},
		{"openai.responses", providers.FormatOpenAIResponses, nil},
		{"anthropic.messages", providers.FormatAnthropic, nil},
		{"gemini", providers.FormatGemini, nil},
		{"openai.chat+budget-estimate", providers.FormatOpenAIChat, []providers.Option{providers.WithBudget(budget)}},
		{"openai.chat+budget-o200k", providers.FormatOpenAIChat, []providers.Option{providers.WithBudget(exactBudget)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := providers.Build(msgs, bc.f, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
