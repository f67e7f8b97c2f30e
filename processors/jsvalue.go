package processors

import (
	"math"
	"strconv"
	"strings"
)

// The reference implementation is JavaScript; these helpers give generic
// JSON values the JavaScript semantics its checks rely on (truthiness,
// string coercion in template literals, UTF-16 lengths).

// truthy reports whether v is truthy in JavaScript.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0 && !math.IsNaN(x)
	}
	if f, ok := toFloat(v); ok {
		return f != 0
	}
	return true
}

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
func jsString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatNumber(x)
	case []any:
		var b strings.Builder
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if item != nil {
				b.WriteString(jsString(item))
			}
		}
		return b.String()
	case map[string]any:
		return "[object Object]"
	}
	if f, ok := toFloat(v); ok {
		return formatNumber(f)
	}
	return "[object Object]"
}

// formatNumber renders f as JavaScript's Number.prototype.toString does.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits and decimal exponent: f = 0.DIGITS × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	n := exp + 1
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	expSign := "+"
	if n-1 < 0 {
		expSign = "-"
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	return sign + m + "e" + expSign + strconv.Itoa(abs(n-1))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// utf16Len is JavaScript's string length.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// isJSSpace reports whether r is whitespace for JavaScript's trim() and \s.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00a0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// trimJS is JavaScript's String.prototype.trim.
func trimJS(s string) string {
	return strings.TrimFunc(s, isJSSpace)
}
