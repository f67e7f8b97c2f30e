package conversation

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/convstream/convstream/internal/jsvalue"
)

// A message's stored JSON is what json.Marshal writes for its fields (see
// Message). Most messages hold only the values decoding JSON yields, and
// for those appendPlain writes the same bytes without encoding/json's
// reflection; anything else goes to json.Marshal.

// appendPlain appends the JSON of v as json.Marshal writes it (object keys
// sorted, <, > and & escaped, U+2028 and U+2029 escaped), provided v holds
// only plain JSON values: nil, bool, finite float64, valid UTF-8 strings,
// []any and map[string]any, nested no deeper than the decoder reads. It
// reports false otherwise, and b is then to be discarded.
func appendPlain(b []byte, v any, depth int) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, t), true
	case float64:
		return appendFloat(b, t)
	case string:
		return appendPlainString(b, t)
	case []any:
		if depth > maxJSONDepth {
			return b, false
		}
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendPlain(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if depth > maxJSONDepth {
			return b, false
		}
		var small [16]string
		keys := small[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendPlainString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = appendPlain(b, t[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendFloat writes f as encoding/json does: like JavaScript's
// Number.prototype.toString, with exponents unpadded.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// marshalEscapes reports whether encoding/json writes the ASCII byte c
// escaped: control characters, the quote and the backslash, and <, > and &
// (HTML-safe). CanonicalJSON accepts text only where it holds to the same.
func marshalEscapes(c byte) bool {
	return c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
}

// appendPlainString writes s as encoding/json does. It reports false for
// invalid UTF-8, which encoding/json replaces.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !marshalEscapes(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = jsvalue.AppendEscapedByte(b, c) // <, > and & as \u003c, \u003e, \u0026
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return b, false
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}
