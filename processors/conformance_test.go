package processors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/processors"
)

// record is one processor call recorded from the reference's unit tests
// (testdata/processors.jsonl.gz; see shared/conformance/README.md).
type record struct {
	Processor string `json:"processor"`
	Test      string `json:"test"`
	State     struct {
		Name   string         `json:"name"`
		Config map[string]any `json:"config"`
	} `json:"state"`
	ConfigHasCallbacks bool   `json:"configHasCallbacks"`
	Clock              string `json:"clock"`
	Input              struct {
		Messages     []map[string]any `json:"messages"`
		Metadata     map[string]any   `json:"metadata"`
		IsAborted    bool             `json:"isAborted"`
		InitialState map[string]any   `json:"initialState"`
	} `json:"input"`
	Expected map[string]any `json:"expected"`
	line     int
}

func loadRecords(t testing.TB) []record {
	t.Helper()
	var out []record
	err := testcorpus.Lines("testdata/processors.jsonl.gz", func(n int, data []byte) (bool, error) {
		var r record
		if err := json.Unmarshal(data, &r); err != nil {
			return false, err
		}
		r.line = n
		out = append(out, r)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r record) clock(t testing.TB) func() time.Time {
	ts, err := time.Parse(time.RFC3339, r.Clock)
	if err != nil {
		t.Fatalf("line %d: clock %q: %v", r.line, r.Clock, err)
	}
	return func() time.Time { return ts }
}

func (r record) context() *enginecore.PipelineContext {
	msgs := make([]enginecore.Message, len(r.Input.Messages))
	copy(msgs, r.Input.Messages)
	return &enginecore.PipelineContext{
		Messages:     msgs,
		Metadata:     r.Input.Metadata,
		InitialState: r.Input.InitialState,
		IsAborted:    r.Input.IsAborted,
	}
}

// run calls p on the record's input, checks that the input was left
// untouched and compares the result with the recorded output.
func (r record) run(p enginecore.Processor) error {
	pc := r.context()
	before := snapshot(pc)
	out, err := p.Process(context.Background(), pc)
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if after := snapshot(pc); after != before {
		return fmt.Errorf("input context was modified")
	}
	return r.compare(out)
}

func snapshot(pc *enginecore.PipelineContext) string {
	b, _ := json.Marshal(struct {
		M []enginecore.Message
		D map[string]any
		I map[string]any
	}{pc.Messages, pc.Metadata, pc.InitialState})
	return string(b)
}

// normalize round-trips v through JSON so it has encoding/json's types.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unmarshalable: %v>", err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

var generatedID = regexp.MustCompile(`\d{10,}$`)

func (r record) compare(out *enginecore.PipelineContext) error {
	inputByID := map[any]map[string]any{}
	for _, m := range r.Input.Messages {
		if id, ok := m["id"]; ok {
			inputByID[id] = m
		}
	}
	got := normalize(out.Messages)
	if out.Messages == nil {
		got = []any{}
	}
	want := r.Expected["messages"]
	gotList, _ := got.([]any)
	wantList, _ := want.([]any)
	if len(gotList) != len(wantList) {
		return fmt.Errorf("messages: got %d, want %d\n got: %s\nwant: %s", len(gotList), len(wantList), js(got), js(want))
	}
	for i := range wantList {
		w, _ := wantList[i].(map[string]any)
		g, _ := gotList[i].(map[string]any)
		if w != nil && g != nil {
			w, g = loosenClock(w, g, inputByID)
		}
		if d := diff(fmt.Sprintf("messages[%d]", i), w, g); d != "" {
			return fmt.Errorf("%s\n got: %s\nwant: %s", d, js(gotList[i]), js(wantList[i]))
		}
	}
	if d := diff("metadata", r.Expected["metadata"], normalize(out.Metadata)); d != "" {
		return fmt.Errorf("%s\n got: %s\nwant: %s", d, js(normalize(out.Metadata)), js(r.Expected["metadata"]))
	}
	if want, _ := r.Expected["isAborted"].(bool); want != out.IsAborted {
		return fmt.Errorf("isAborted: got %v, want %v", out.IsAborted, want)
	}
	if want, ok := r.Expected["abortReason"]; ok && want != nil && want != out.AbortReason {
		return fmt.Errorf("abortReason: got %q, want %v", out.AbortReason, want)
	}
	return nil
}

// loosenClock masks the values a processor took from the wall clock, which
// the recording could not fix: in a message it created (id absent from the
// input) the timestamps and the digits ending its id; in an input message
// a timestamp the processor set (absent from, or different in, the input).
// Masked values must still be numbers on both sides.
func loosenClock(want, got map[string]any, inputByID map[any]map[string]any) (map[string]any, map[string]any) {
	in, known := inputByID[want["id"]]
	mask := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		for _, k := range []string{"createdAt", "updatedAt"} {
			if _, ok := out[k].(float64); ok && (!known || in[k] != want[k]) {
				out[k] = "<number>"
			}
		}
		if id, ok := out["id"].(string); ok && !known {
			out["id"] = generatedID.ReplaceAllString(id, "<number>")
		}
		return out
	}
	return mask(want), mask(got)
}

// diff compares JSON values: objects by key set (absent differs from null),
// arrays in order, numbers by value. It returns "" when equal.
func diff(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want object", path, js(got))
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			wv, wok := w[k]
			gv, gok := g[k]
			switch {
			case !wok:
				return fmt.Sprintf("%s.%s: unexpected %s", path, k, js(gv))
			case !gok:
				return fmt.Sprintf("%s.%s: missing, want %s", path, k, js(wv))
			}
			if d := diff(path+"."+k, wv, gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %s, want %s", path, js(got), js(want))
		}
		for i := range w {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s: got %s, want %s", path, js(got), js(want))
	}
	return ""
}

func js(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// Conformance counters, reported by TestMain.
var (
	conformancePassed, conformanceTotal atomic.Int64
	callbackPassed, callbackTotal       atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if n := conformanceTotal.Load(); n > 0 {
		fmt.Printf("processor conformance: %d/%d passed\n", conformancePassed.Load(), n)
	}
	if n := callbackTotal.Load(); n > 0 {
		fmt.Printf("processor conformance (callback cases as Go tests): %d/%d passed\n", callbackPassed.Load(), n)
	}
	os.Exit(code)
}

// TestConformance replays every recorded call without callbacks: the
// processor is built through the default registry from the recorded state
// (its config) and must produce the recorded messages and metadata.
func TestConformance(t *testing.T) {
	for _, r := range loadRecords(t) {
		if r.ConfigHasCallbacks {
			continue
		}
		conformanceTotal.Add(1)
		name := fmt.Sprintf("%03d/%s/%s", r.line, r.Processor, strings.ReplaceAll(r.Test, " ", "_"))
		t.Run(name, func(t *testing.T) {
			reg := processors.Default(processors.WithClock(r.clock(t)))
			p, err := reg.New(r.State.Name, r.State.Config)
			if err != nil {
				t.Fatalf("build %s from %s: %v", r.State.Name, js(r.State.Config), err)
			}
			if err := r.run(p); err != nil {
				t.Fatalf("%s\n%v", r.Test, err)
			}
			conformancePassed.Add(1)
		})
	}
}
