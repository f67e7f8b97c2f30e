package jsvalue

import (
	"math"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	cases := map[float64]string{
		0: "0", 1: "1", -1.5: "-1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1.5e-7: "1.5e-7", 0.000001: "0.000001", 123456789012: "123456789012",
		math.Inf(1): "Infinity", math.NaN(): "NaN",
	}
	a, b := 0.1, 0.2
	cases[a+b] = "0.30000000000000004"
	for f, want := range cases {
		if got := FormatNumber(f); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestNumberAndTruthy(t *testing.T) {
	if n := Number(nil, true); n != 0 {
		t.Errorf("Number(null) = %v", n)
	}
	if n := Number(nil, false); !math.IsNaN(n) {
		t.Errorf("Number(undefined) = %v", n)
	}
	for s, want := range map[string]float64{" 12 ": 12, "0x10": 16, "": 0, "1e3": 1000} {
		if got := Number(s, true); got != want {
			t.Errorf("Number(%q) = %v, want %v", s, got, want)
		}
	}
	if !math.IsNaN(Number("2025-11-07T07:19:44Z", true)) {
		t.Error("a date string is not a number")
	}
	for _, v := range []any{nil, false, 0.0, "", math.NaN(), 0} {
		if Truthy(v) {
			t.Errorf("Truthy(%#v)", v)
		}
	}
	for _, v := range []any{true, 1.0, "a", []any{}, map[string]any{}, 3} {
		if !Truthy(v) {
			t.Errorf("!Truthy(%#v)", v)
		}
	}
	if s := String([]any{1.0, nil, "x"}); s != "1,,x" {
		t.Errorf("String = %q", s)
	}
	if n := UTF16Len("a🙂"); n != 3 {
		t.Errorf("UTF16Len = %d", n)
	}
}

func TestAppendJSONString(t *testing.T) {
	cases := map[string]string{
		"plain":        `"plain"`,
		"a\"b\\c":      `"a\"b\\c"`,
		"\n\t\x01\b\f": `"\n\t\u0001\b\f"`,
		"é🙂\u2028":     "\"é🙂\u2028\"",
		"bad\xffutf":   "\"bad\ufffdutf\"",
	}
	for in, want := range cases {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}
