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
	engine, err := processors.Default().Build(processors.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	var out []pipelineOutput
	for _, f := range []string{"reference-suite", "generated-normal", "generated-noise", "robustness"} {
		cases, err := testcorpus.Decode[conformanceCase]("../conversation/testdata/conformance/" + f + ".jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			doc, _ := json.Marshal(map[string]any{"messages": c.Input.Messages, "messageGroups": c.Input.MessageGroups})
			msgs, groups, err := conversation.DecodeInput(bytes.NewReader(doc))
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			parsed, err := conversation.Parse(msgs, groups)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			flat := make([]enginecore.Message, len(parsed.FlatList))
			for i, m := range parsed.FlatList {
				flat[i] = m.Fields()
			}
			res, err := engine.Process(context.Background(), flat)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			out = append(out, pipelineOutput{name: f + "/" + c.Name, messages: res.Messages})
		}
	}
	return out
}
