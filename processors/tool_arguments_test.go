package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestSanitizeToolArguments(t *testing.T) {
	// Expected values were produced by the reference's sanitizer (with the
	// partial-json parser) under Node.
	cases := []struct{ in, want string }{
		{`{"description":"Create data models","language":"python"}`, `{"description":"Create data models","language":"python"}`},
		{"{\n  \"a\": 1,\n  \"b\": 2\n}", "{\n  \"a\": 1,\n  \"b\": 2\n}"},
		{``, `{}`},
		{`{"description": "Create data models", "language": "py`, `{"description":"Create data models","language":"py"}`},
		{`{, "description": "x"}`, `{}`},
		{`not json at all`, `{}`},
		{`{{{`, `{}`},
		{`null`, `null`},
		{`123`, `123`},
		{`true`, `true`},
		{`{"a": [1, 2, {"b": tr`, `{"a":[1,2,{"b":true}]}`},
		{`{"a": "x\`, `{"a":"x"}`},
		{`{"a": 1.`, `{"a":1}`},
		{`{"a": -`, `{}`},
		{`{"a": 1e`, `{"a":1}`},
		{`[1, 2`, `[1,2]`},
		{`{"a":"b"}  `, `{"a":"b"}  `},
		{`{"a": "\u12`, `{"a":""}`},
		{`{"k": "v", "n": nu`, `{"k":"v","n":null}`},
		{`{"x": 1, "x": 2, "y"`, `{"x":2}`},
		{`  {"text": "line\nbreak\t<tag>&", "n": 1e400`, `{"text":"line\nbreak\t<tag>&","n":null}`},
		{`{"a": NaN, "b": -Inf`, `{"a":null,"b":null}`},
		{`{"a": 01`, `{}`},
		{`{"z": 1, "a": {"nested": "ok"`, `{"z":1,"a":{"nested":"ok"}}`},
	}
	for _, c := range cases {
		if got := processors.SanitizeToolArguments(c.in); got != c.want {
			t.Errorf("SanitizeToolArguments(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := processors.SanitizeToolArguments(processors.SanitizeToolArguments("{}")); got != "{}" {
		t.Errorf("not idempotent: %q", got)
	}
}

func TestParseToolArguments(t *testing.T) {
	manifest := &processors.ToolManifest{
		Identifier: "agent",
		API: []processors.ToolAPI{{
			Name:       "callSubAgent",
			Parameters: map[string]any{"type": "object", "required": []any{"description", "instruction"}},
		}},
	}

	// A model stuffed the remaining fields into the first one.
	args := `{"description": "real desc\", \"instruction\": \"real instruction\", \"timeout\": 120}"}`
	got := processors.ParseToolArguments(manifest, "callSubAgent", args)
	assertJSON(t, got, `{"description":"real desc","instruction":"real instruction","timeout":120}`)

	// Complete arguments are left alone.
	got = processors.ParseToolArguments(manifest, "callSubAgent", `{"description":"d","instruction":"i"}`)
	assertJSON(t, got, `{"description":"d","instruction":"i"}`)

	// Truncated JSON is completed; without a schema nothing is repaired.
	got = processors.ParseToolArguments(nil, "x", `{"a": "b", "c": [1`)
	assertJSON(t, got, `{"a":"b","c":[1]}`)

	// Garbage gives an empty object.
	assertJSON(t, processors.ParseToolArguments(manifest, "callSubAgent", "garbage"), `{}`)
	assertJSON(t, processors.ParseToolArguments(manifest, "callSubAgent", "[1,2]"), `{}`)
}
