package conversation

import (
	"math"
	"strconv"

	"github.com/convstream/convstream/internal/jsvalue"
)

// The reference implementation is JavaScript, and some of its behaviour on
// untidy input follows from JavaScript's value rules (truthiness, strict
// equality between undefined and null, numeric coercion in sorts and in
// Math.min/max). The helpers here reproduce those rules for JSON values.

// keyKind tells absent, null and string values apart, as === does.
type keyKind uint8

const (
	keyAbsent keyKind = iota
	keyNull
	keyString
	keyOther // a number, bool, array or object: equal only to itself
)

// key is a comparable stand-in for a JSON field used in equality tests.
type key struct {
	kind keyKind
	s    string
	obj  *byte // identity of an object or array value: === compares references
}

// keyOf reads field name of obj as a key.
func keyOf(obj map[string]any, name string) key {
	v, ok := obj[name]
	return keyOfValue(v, ok)
}

// keyOfValue reads a field's value v as a key; present false means absent.
func keyOfValue(v any, present bool) key {
	if !present {
		return key{kind: keyAbsent}
	}
	switch t := v.(type) {
	case nil:
		return key{kind: keyNull}
	case string:
		return key{kind: keyString, s: t}
	case float64:
		return key{kind: keyOther, s: "n:" + strconv.FormatFloat(t, 'g', -1, 64)}
	case bool:
		return key{kind: keyOther, s: "b:" + strconv.FormatBool(t)}
	default:
		// Objects and arrays are === only to themselves; give each read
		// its own identity.
		return key{kind: keyOther, s: "o", obj: new(byte)}
	}
}

// truthy reports whether v is truthy: everything but absent, null, false,
// 0, NaN and "".
func (k key) truthy() bool {
	switch k.kind {
	case keyString:
		return k.s != ""
	case keyOther:
		return k.s != "n:0" && k.s != "b:false" && k.s != "n:NaN"
	}
	return false
}

// truthy applies JavaScript truthiness to a decoded JSON value.
func truthy(v any) bool { return jsvalue.Truthy(v) }

// truthyString returns v when it is a non-empty string, else "".
func truthyString(v any) string {
	s, _ := v.(string)
	return s
}

func hasKey(m map[string]any, name string) bool {
	_, ok := m[name]
	return ok
}

// toNumber converts a JSON value as JavaScript's Number() does; an absent
// value (present == false) is undefined, which converts to NaN.
func toNumber(v any, present bool) float64 { return jsvalue.Number(v, present) }

// jsNumber turns a float64 computed like a JavaScript number into the JSON
// value JSON.stringify would write: NaN and infinities become null.
func jsNumber(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}
