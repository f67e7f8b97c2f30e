package jsvalue

import "fmt"

// Kind is the kind of a JSON value, as JavaScript's typeof tells values
// apart but with null and arrays named on their own, as JSON Schema's
// "type" names them. The zero Kind is KindUndefined: no value at all, such
// as an absent field.
type Kind uint8

// The kinds of JSON values.
const (
	KindUndefined Kind = iota // absent
	KindNull
	KindBoolean
	KindNumber
	KindString
	KindArray
	KindObject
	// KindOther is a Go value that is no JSON value (a struct, a
	// []string…), which only a Go caller can hand over, or text that no
	// JSON value starts with.
	KindOther
)

var kindNames = [...]string{
	KindUndefined: "undefined",
	KindNull:      "null",
	KindBoolean:   "boolean",
	KindNumber:    "number",
	KindString:    "string",
	KindArray:     "array",
	KindObject:    "object",
	KindOther:     "other",
}

// String names k as error messages and JSON Schema do: "null",
// "boolean", "number", "string", "array", "object"; "undefined" and
// "other" for the rest.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "other"
}

// KindOf returns the kind of a decoded JSON value: nil, bool, a number of
// any Go kind (float64 from encoding/json, int and the like from Go
// configuration), string, []any or map[string]any. Anything else is
// KindOther.
func KindOf(v any) Kind {
	switch v.(type) {
	case nil:
		return KindNull
	case bool:
		return KindBoolean
	case string:
		return KindString
	case []any:
		return KindArray
	case map[string]any:
		return KindObject
	}
	if _, ok := Float(v); ok {
		return KindNumber
	}
	return KindOther
}

// FieldKind returns the kind of field name of obj, KindUndefined when obj
// has no such field.
func FieldKind(obj map[string]any, name string) Kind {
	v, ok := obj[name]
	if !ok {
		return KindUndefined
	}
	return KindOf(v)
}

// KindOfText returns the kind of the JSON value that text starts with,
// after any whitespace, read off its first byte: it does not check the
// rest, which is the decoder's work. Empty text is KindUndefined; text that
// no JSON value starts so is KindOther.
func KindOfText(text []byte) Kind {
	for _, c := range text {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case 'n':
			return KindNull
		case 't', 'f':
			return KindBoolean
		case '"':
			return KindString
		case '[':
			return KindArray
		case '{':
			return KindObject
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return KindNumber
		}
		return KindOther
	}
	return KindUndefined
}

// TypeName names the kind of v for an error message ("must be a string,
// got number"); a value that is no JSON value is named by its Go type,
// which tells a Go caller what it handed over.
func TypeName(v any) string {
	if k := KindOf(v); k != KindOther {
		return k.String()
	}
	return fmt.Sprintf("%T", v)
}
