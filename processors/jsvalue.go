package processors

import (
	"github.com/convstream/convstream/internal/jsvalue"
)

// The reference implementation is JavaScript; these helpers give generic
// JSON values the JavaScript semantics its checks rely on (truthiness,
// string coercion in template literals, UTF-16 lengths).

// truthy reports whether v is truthy in JavaScript.
func truthy(v any) bool { return jsvalue.Truthy(v) }

// str returns v if it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// arr returns v if it is an array, else nil.
func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

// obj returns v if it is an object, else nil.
func obj(v any) map[string]any {
	o, _ := v.(map[string]any)
	return o
}

// hasItems reports JavaScript's `v && v.length > 0` for an array value.
func hasItems(v any) bool { return len(arr(v)) > 0 }

// dig follows keys through nested objects like optional chaining
// (a?.b?.c); it returns nil when a step is missing or not an object.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// or returns a if it is truthy, else b (JavaScript's a || b).
func or(a, b any) any {
	if truthy(a) {
		return a
	}
	return b
}

// textOf converts a field of m the way a template literal does: an absent
// field reads "undefined".
func textOf(m map[string]any, key string) string {
	v, ok := m[key]
	if !ok {
		return "undefined"
	}
	return jsString(v)
}

// jsString converts v as JavaScript's String(v) does.
func jsString(v any) string { return jsvalue.String(v) }

// formatNumber renders f as JavaScript's Number.prototype.toString does.
func formatNumber(f float64) string { return jsvalue.FormatNumber(f) }

// utf16Len is JavaScript's string length.
func utf16Len(s string) int { return jsvalue.UTF16Len(s) }

// isJSSpace reports whether r is whitespace for JavaScript's trim() and \s.
func isJSSpace(r rune) bool { return jsvalue.IsSpace(r) }

// trimJS is JavaScript's String.prototype.trim.
func trimJS(s string) string { return jsvalue.TrimSpace(s) }
