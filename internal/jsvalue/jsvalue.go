// Package jsvalue gives decoded JSON values (nil, bool, float64, string,
// []any, map[string]any, and Go numbers from configuration) the JavaScript
// semantics that the TypeScript reference relies on: truthiness, Number()
// and String() coercion, UTF-16 lengths and trim(); it names the kind of a
// value, decoded or as JSON text (Kind), and escapes strings as
// JSON.stringify does.
package jsvalue

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Float returns v as a float64 when it is a number of any Go kind.
func Float(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint:
		return float64(n), true
	}
	return 0, false
}

// Truthy reports whether v is truthy: everything but null, false, 0, NaN
// and "".
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	if f, ok := Float(v); ok {
		return f != 0 && !math.IsNaN(f)
	}
	return true
}

// Number converts v as JavaScript's Number() does. present false stands
// for undefined, which converts to NaN.
func Number(v any, present bool) float64 {
	if !present {
		return math.NaN()
	}
	switch t := v.(type) {
	case nil:
		return 0
	case bool:
		if t {
			return 1
		}
		return 0
	case string:
		return parseNumber(t)
	case []any:
		switch len(t) {
		case 0:
			return 0
		case 1:
			switch e := t[0].(type) {
			case string:
				return parseNumber(e)
			case nil:
				return 0
			}
			if f, ok := Float(t[0]); ok {
				return f
			}
		}
		return math.NaN()
	}
	if f, ok := Float(v); ok {
		return f
	}
	return math.NaN()
}

// parseNumber is Number() of a string: trimmed, empty is 0, decimal or
// 0x/0o/0b integers, Infinity; anything else is NaN.
func parseNumber(s string) float64 {
	s = TrimSpace(s)
	switch s {
	case "":
		return 0
	case "Infinity", "+Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			n, err := strconv.ParseUint(s[2:], base, 64)
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return math.NaN()
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// String converts v as JavaScript's String() does.
func String(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case []any:
		var b strings.Builder
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if item != nil {
				b.WriteString(String(item))
			}
		}
		return b.String()
	case map[string]any:
		return "[object Object]"
	}
	if f, ok := Float(v); ok {
		return FormatNumber(f)
	}
	return "[object Object]"
}

// FormatNumber renders f as JavaScript's Number.prototype.toString does.
func FormatNumber(f float64) string {
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
	expSign, x := "+", n-1
	if x < 0 {
		expSign, x = "-", -x
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	return sign + m + "e" + expSign + strconv.Itoa(x)
}

// UTF16Len is JavaScript's string length: UTF-16 code units.
func UTF16Len(s string) int {
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

// IsSpace reports whether r is whitespace for JavaScript's trim() and \s.
func IsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x00a0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// TrimSpace is JavaScript's String.prototype.trim.
func TrimSpace(s string) string { return strings.TrimFunc(s, IsSpace) }

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string escaped as JSON.stringify
// escapes it: quotes, backslashes and control characters; invalid UTF-8
// becomes U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				b = append(b, c)
				i++
				continue
			}
			r, w := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += w
			continue
		}
		b = AppendEscapedByte(b, c)
		i++
	}
	return append(b, '"')
}

// AppendEscapedByte appends the JSON escape of an ASCII byte that a JSON
// string cannot hold as it is (a quote, a backslash, a control character)
// or that an encoder chooses to escape: the short form where JSON has one,
// else \u00XX.
func AppendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
