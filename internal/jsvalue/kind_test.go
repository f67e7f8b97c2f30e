package jsvalue

import (
	"encoding/json"
	"testing"
)

// TestKindOfTextMatchesKindOf: the kind read off a JSON text's first byte
// is the kind of what encoding/json decodes the text to.
func TestKindOfTextMatchesKindOf(t *testing.T) {
	texts := map[string]Kind{
		`null`: KindNull, `true`: KindBoolean, `false`: KindBoolean, `0`: KindNumber, `-1.5e3`: KindNumber,
		`12`: KindNumber, `""`: KindString, `"x\"y"`: KindString, `[]`: KindArray, `[1,{}]`: KindArray,
		`{}`: KindObject, `{"a":[null]}`: KindObject, " \n\t\r {}": KindObject,
	}
	for text, want := range texts {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got := KindOf(v); got != want {
			t.Errorf("KindOf(%q decoded) = %v, want %v", text, got, want)
		}
		if got := KindOfText([]byte(text)); got != want {
			t.Errorf("KindOfText(%q) = %v, want %v", text, got, want)
		}
	}
	for _, text := range []string{"", "  "} {
		if got := KindOfText([]byte(text)); got != KindUndefined {
			t.Errorf("KindOfText(%q) = %v, want undefined", text, got)
		}
	}
	for _, text := range []string{"x", "+1", "'a'", "}"} {
		if got := KindOfText([]byte(text)); got != KindOther {
			t.Errorf("KindOfText(%q) = %v, want other", text, got)
		}
	}
}

// TestTypeName: JSON values are named by their kind, Go numbers of any
// kind as numbers (configuration built in Go), other Go values by their Go
// type, so that an error message tells a Go caller what it passed.
func TestTypeName(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "boolean"}, {1.5, "number"}, {3, "number"}, {int64(3), "number"},
		{uint(3), "number"}, {float32(1), "number"}, {"s", "string"}, {[]any{}, "array"},
		{map[string]any{}, "object"}, {[]string{"a"}, "[]string"}, {struct{}{}, "struct {}"},
		{map[string]string{}, "map[string]string"},
	}
	for _, c := range cases {
		if got := TypeName(c.v); got != c.want {
			t.Errorf("TypeName(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestFieldKind(t *testing.T) {
	obj := map[string]any{"a": nil, "b": "x", "c": map[string]any{}}
	for name, want := range map[string]Kind{"a": KindNull, "b": KindString, "c": KindObject, "d": KindUndefined} {
		if got := FieldKind(obj, name); got != want {
			t.Errorf("FieldKind(%q) = %v, want %v", name, got, want)
		}
	}
	if got := FieldKind(nil, "a"); got != KindUndefined {
		t.Errorf("FieldKind of a nil object = %v", got)
	}
	if Kind(200).String() != "other" || KindUndefined.String() != "undefined" {
		t.Error("Kind.KindString out of range")
	}
}
