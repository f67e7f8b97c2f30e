package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

const pipelineInput = `[
	{"id":"a","role":"user","content":"What is the weather?"},
	{"id":"b","parentId":"a","role":"assistant","content":"","tools":[{"id":"c1","identifier":"weather","apiName":"get","arguments":"{\"city\":\"Paris\""}]},
	{"id":"t","parentId":"b","role":"tool","tool_call_id":"c1","content":"Sunny","plugin":{"identifier":"weather","apiName":"get"}},
	{"id":"d","parentId":"t","role":"assistant","content":"It is sunny."}
]`

type pipelineOutput struct {
	Messages  []map[string]any `json:"messages"`
	Metadata  map[string]any   `json:"metadata"`
	IsAborted bool             `json:"isAborted"`
	Stats     enginecore.Stats `json:"stats"`
}

func TestPipelineDefaultSpec(t *testing.T) {
	doc := `{"messages":` + pipelineInput + `}`
	for _, in := range []string{pipelineInput, doc} {
		code, out, errs := run(t, in, "pipeline")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var res pipelineOutput
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var roles []string
		for _, m := range res.Messages {
			roles = append(roles, m["role"].(string))
		}
		if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant" {
			t.Fatalf("roles %s in %s", got, out)
		}
		call := res.Messages[2]["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
		if call["name"] != "weather____get" || call["arguments"] != `{"city":"Paris"}` {
			t.Fatalf("tool call %v", call)
		}
		if res.Stats.ProcessedCount != 26 || len(res.Stats.ProcessorDurations) != 26 {
			t.Fatalf("stats %+v", res.Stats)
		}
	}
}

func TestPipelineSpecFile(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	writeFile(t, spec, `
name: tiny
processors:
  - name: SystemRoleInjector
    config: {systemRole: "Answer in French."}
  - GroupMessageFlattenProcessor
  - MessageCleanupProcessor
`)
	input := filepath.Join(dir, "conv.json")
	writeFile(t, input, pipelineInput)
	code, out, errs := run(t, "", "pipeline", "--spec", spec, input)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res pipelineOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 5 || res.Messages[0]["content"] != "Answer in French." || res.Stats.ProcessedCount != 3 {
		t.Fatalf("output %s", out)
	}
}

func TestPipelineErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "processors:\n  - name: HistoryTruncateProcessor\n    config: {historyCount: lots}\n")
	code, _, errs := run(t, pipelineInput, "pipeline", "--spec", bad)
	if code != 1 || !strings.Contains(errs, "processors[0].config.historyCount: must be an integer") {
		t.Fatalf("bad spec: exit %d, stderr %q", code, errs)
	}
	if code, _, errs = run(t, pipelineInput, "pipeline", "--spec", filepath.Join(dir, "none.yaml")); code != 1 || errs == "" {
		t.Fatalf("missing spec: exit %d", code)
	}
	if code, _, _ = run(t, "", "pipeline", "a", "b"); code != 2 {
		t.Fatalf("two files: exit %d", code)
	}
	if code, _, errs = run(t, `{"nope":1}`, "pipeline"); code != 1 || errs == "" {
		t.Fatalf("bad input: exit %d", code)
	}
	if code, _, _ = run(t, "", "pipeline", "/does/not/exist"); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
	if code, _, _ = run(t, "", "pipeline", "--bogus"); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
}

func TestPipelineProcessorFailure(t *testing.T) {
	reg := processors.Default()
	err := reg.Register("Exploder", func(map[string]any) (enginecore.Processor, error) {
		return enginecore.NewFunc("Exploder", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			return nil, errors.New(strings.Repeat("bad ", 100))
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "spec.json")
	writeFile(t, spec, `{"processors":["MessageCleanupProcessor","Exploder"]}`)

	var out, errb bytes.Buffer
	code := pipelineCommand(context.Background(), reg, []string{"--spec", spec}, strings.NewReader(pipelineInput), &out, &errb)
	if code != 2 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
	var perr map[string]any
	if err := json.Unmarshal(errb.Bytes(), &perr); err != nil {
		t.Fatalf("stderr is not JSON: %q", errb.String())
	}
	msg, _ := perr["message"].(string)
	if perr["name"] != "PipelineError" || perr["processorName"] != "Exploder" ||
		!strings.HasPrefix(msg, "Processor [Exploder] execution failed: bad bad") || !strings.HasSuffix(msg, "…") {
		t.Fatalf("stderr %s", errb.String())
	}
}

func TestPipelineCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := pipelineCommand(ctx, processors.Default(), nil, strings.NewReader(pipelineInput), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "context canceled") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
