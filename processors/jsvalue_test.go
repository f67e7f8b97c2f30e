package processors

import (
	"math"
	"strings"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	// Expected strings are JavaScript's String(n), from Node.
	cases := []struct {
		n    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {0.1, "0.1"},
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {123456789012345680000, "123456789012345680000"},
		{1.5e-7, "1.5e-7"}, {0.000001, "0.000001"}, {1e-7, "1e-7"}, {-2.5e-10, "-2.5e-10"},
		{3.14159, "3.14159"}, {1.0 / 3, "0.3333333333333333"}, {100, "100"}, {1e300, "1e+300"},
		{9007199254740992, "9007199254740992"}, {math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{1796008336539, "1796008336539"},
	}
	for _, c := range cases {
		if got := formatNumber(c.n); got != c.want {
			t.Errorf("formatNumber(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestJSString(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "true"}, {"s", "s"}, {2.5, "2.5"}, {42, "42"},
		{[]any{"a", nil, 1.0, []any{"b", "c"}}, "a,,1,b,c"},
		{map[string]any{"a": 1.0}, "[object Object]"},
	}
	for _, c := range cases {
		if got := jsString(c.v); got != c.want {
			t.Errorf("jsString(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := textOf(map[string]any{}, "x"); got != "undefined" {
		t.Errorf("textOf(missing) = %q", got)
	}
}

func TestTruthy(t *testing.T) {
	for _, v := range []any{nil, false, "", 0.0, math.NaN(), 0} {
		if truthy(v) {
			t.Errorf("truthy(%#v) = true", v)
		}
	}
	for _, v := range []any{true, "0", 1.0, -1, []any{}, map[string]any{}} {
		if !truthy(v) {
			t.Errorf("truthy(%#v) = false", v)
		}
	}
}

func TestTrimJSAndUTF16(t *testing.T) {
	if got := trimJS(" \u00a0\ufeffab\u2028 "); got != "ab" {
		t.Errorf("trimJS = %q", got)
	}
	if got := utf16Len("a😀中"); got != 4 {
		t.Errorf("utf16Len = %d", got)
	}
}

func TestHashMessageID(t *testing.T) {
	// Expected values from the reference's visual-ref hash under Node.
	cases := map[string]string{
		"test": "1cs5ql", "msg-1": "1jvity", "": "ztntfp", "中文": "mj2ca5", "😀x": "vlh8vk",
		strings.Repeat("a", 50): "1iq0hp",
	}
	for id, want := range cases {
		if got := hashMessageID(id); got != want {
			t.Errorf("hashMessageID(%q) = %q, want %q", id, got, want)
		}
	}
	if got := visualRef("image", 0, "test"); got != "msg_1cs5ql.image_1" {
		t.Errorf("visualRef = %q", got)
	}
	if got := visualRef("video", 2, nil); got != "video_3" {
		t.Errorf("visualRef without id = %q", got)
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	var cfg struct {
		Count   *int              `json:"count"`
		Name    string            `json:"name"`
		Flags   []bool            `json:"flags"`
		Nested  struct{ X int }   `json:"nested"`
		Mapping map[string]string `json:"mapping"`
	}
	err := decodeConfig(map[string]any{
		"count":   2.5,
		"name":    1.0,
		"flags":   []any{true, "no"},
		"nested":  map[string]any{"Y": 1.0},
		"mapping": map[string]any{"k": false},
		"extra":   true,
	}, &cfg)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"count: must be an integer, got number",
		"name: must be a string, got number",
		"flags[1]: must be a boolean, got string",
		"nested.Y: unknown field",
		"mapping.k: must be a string, got boolean",
		"extra: unknown field",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	if err := decodeConfig(map[string]any{"count": 3.0, "name": "x", "flags": nil}, &cfg); err != nil {
		t.Fatal(err)
	}
	if *cfg.Count != 3 || cfg.Name != "x" || cfg.Flags != nil {
		t.Fatalf("decoded %+v", cfg)
	}
}
