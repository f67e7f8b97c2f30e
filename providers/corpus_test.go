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
)

// pipelineOutput is the default pipeline's output for one conversation.
type pipelineOutput struct {
	name     string
	messages []enginecore.Message
	// input is what the pipeline ran on: the conversation's flat list.
	input []enginecore.Message
}

// corpus runs the default pipeline over every conversation of the shared
// conformance corpus, as the worker answers an inference request for its
// active path.
func corpus(t testing.TB) []pipelineOutput {
	t.Helper()
	type conformanceCase struct {
		Name  string `json:"name"`
		Input struct {
			Messages      json.RawMessage `json:"messages"`
			MessageGroups json.RawMessage `json:"messageGroups"`
		} `json:"input"`
	}
	var out []pipelineOutput
	for _, f := range []string{"reference-suite", "generated-normal", "generated-noise", "robustness"} {
		cases, err := testcorpus.Decode[conformanceCase]("../conversation/testdata/conformance/" + f + ".jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			doc, _ := json.Marshal(map[string]any{"messages": c.Input.Messages, "messageGroups": c.Input.MessageGroups})
			o := runPipeline(t, processors.DefaultSpec(), doc)
			o.name = f + "/" + c.Name
			out = append(out, o)
		}
	}
	return out
}

// runPipeline runs spec over the flat list of the conversation doc
// ({"messages","messageGroups"} or a bare array), as the worker does.
func runPipeline(t testing.TB, spec *processors.Spec, doc []byte) pipelineOutput {
	t.Helper()
	engine, err := processors.Default().Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	msgs, groups, err := conversation.DecodeInput(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := conversation.Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	flat := make([]enginecore.Message, len(parsed.FlatList))
	for i, m := range parsed.FlatList {
		flat[i] = m.Fields()
	}
	res, err := engine.Process(context.Background(), flat)
	if err != nil {
		t.Fatal(err)
	}
	return pipelineOutput{messages: res.Messages, input: flat}
}
