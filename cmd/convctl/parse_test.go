package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestParseDocumentAndArray(t *testing.T) {
	doc := `{"messages":[{"id":"a","role":"user","content":"hi"},{"id":"b","parentId":"a","role":"assistant","content":"yo"}]}`
	arr := `[{"id":"a","role":"user","content":"hi"},{"id":"b","parentId":"a","role":"assistant","content":"yo"}]`
	for _, in := range []string{doc, arr} {
		code, out, errs := run(t, in, "parse")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var res struct {
			ContextTree []map[string]any          `json:"contextTree"`
			FlatList    []map[string]any          `json:"flatList"`
			MessageMap  map[string]map[string]any `json:"messageMap"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.FlatList) != 2 || len(res.ContextTree) != 2 || len(res.MessageMap) != 2 {
			t.Fatalf("unexpected result: %s", out)
		}
	}
}

func TestParseErrors(t *testing.T) {
	code, _, errs := run(t, `{"nope":1}`, "parse")
	if code != 1 || !strings.Contains(errs, "messages") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, _ = run(t, ``, "parse", "a", "b")
	if code != 2 {
		t.Fatalf("two files: exit %d, want 2", code)
	}
	code, _, errs = run(t, ``, "parse", "/does/not/exist")
	if code != 1 || errs == "" {
		t.Fatalf("missing file: exit %d, stderr %q", code, errs)
	}
}

// TestParseJSONL runs the conformance file through --jsonl: one line out per
// line in, in order, errors in place.
func TestParseJSONL(t *testing.T) {
	f, err := os.Open("../../conversation/testdata/conformance/reference-suite.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	if _, err := in.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	input := in.String() + "not json\n" + `{"name":"no input"}` + "\n"
	code, out, errs := run(t, input, "parse", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(input))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var c struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(sc.Bytes(), &c)
		names = append(names, c.Name)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(names) {
		t.Fatalf("%d lines out for %d in", len(lines), len(names))
	}
	for i, l := range lines {
		var r struct {
			Name   string          `json:"name"`
			Output json.RawMessage `json:"output"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Name != names[i] {
			t.Fatalf("line %d: name %q, want %q", i, r.Name, names[i])
		}
		last := i >= len(lines)-2
		if last != (r.Error != "") || (r.Output == nil) != last {
			t.Fatalf("line %d: output %t, error %q", i, r.Output != nil, r.Error)
		}
	}
	if !strings.Contains(errs, "2 of") {
		t.Fatalf("stderr %q should count the failed lines", errs)
	}
}
