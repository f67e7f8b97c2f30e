package conversation

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Events mostly carry a message's JSON already in the form NewMessage
// stores it in: a Go publisher's json.Marshal of a map writes exactly that
// form, and a JavaScript one's JSON.stringify differs only in the order of
// the members. CanonicalJSON recognizes both without decoding the text
// into maps, so that such a message is built from its bytes
// (NewMessageCanonical): decoding into maps and encoding them again took a
// worker about 2.5 times as long to validate an append and build its
// message (BenchmarkValidateAppend in streams; BENCHMARKS.md).

// canonicalDepth bounds the nesting CanonicalJSON follows; deeper text goes
// the general way.
const canonicalDepth = 64

// CanonicalJSON returns the JSON text of an object in the form NewMessage
// stores it in (compact, keys sorted, strings and numbers written as
// json.Marshal writes them), without decoding it: data itself when it is in
// that form already, or, when the only fault is the order of the object's
// own members, those members sorted, appended to buf. It reports false for
// anything else (whitespace, other escapes or number forms, unsorted
// objects below the top, duplicate keys, invalid JSON), which
// NewMessageJSON handles: a false is never a verdict on the text.
func CanonicalJSON(buf, data []byte) ([]byte, bool) {
	s := canonScanner{data: data}
	if len(data) < 2 || data[0] != '{' {
		return nil, false
	}
	type member struct{ key, all []byte }
	var small [16]member
	members := small[:0]
	sorted := true
	i := 1
	if data[i] == '}' {
		if len(data) != 2 {
			return nil, false
		}
		return data, true
	}
	for {
		start := i
		key, end, ok := s.key(i)
		if !ok || end >= len(data) || data[end] != ':' {
			return nil, false
		}
		if i, ok = s.value(end+1, 1); !ok {
			return nil, false
		}
		if n := len(members); n > 0 && bytes.Compare(members[n-1].key, key) >= 0 {
			sorted = false
		}
		members = append(members, member{key: key, all: data[start:i]})
		if i >= len(data) {
			return nil, false
		}
		if data[i] == '}' {
			if i+1 != len(data) {
				return nil, false
			}
			break
		}
		if data[i] != ',' {
			return nil, false
		}
		i++
	}
	if sorted {
		return data, true
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	for k := 1; k < len(members); k++ {
		if bytes.Equal(members[k-1].key, members[k].key) {
			return nil, false // decoding keeps the last: not a reordering
		}
	}
	out := append(slices.Grow(buf, len(data)), '{')
	for k, m := range members {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, m.all...)
	}
	return append(out, '}'), true
}

// canonScanner checks values of data for the canonical form, each method
// taking the index a value starts at and returning the index after it.
type canonScanner struct {
	data []byte
	num  []byte // room for re-formatting a number
}

// value checks the value at i, nested depth deep.
func (s *canonScanner) value(i, depth int) (int, bool) {
	d := s.data
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '"':
		_, end, ok := s.str(i)
		return end, ok
	case c == '{':
		if depth >= canonicalDepth {
			return i, false
		}
		return s.object(i, depth+1)
	case c == '[':
		if depth >= canonicalDepth {
			return i, false
		}
		return s.array(i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	case bytes.HasPrefix(d[i:], []byte("true")):
		return i + 4, true
	case bytes.HasPrefix(d[i:], []byte("false")):
		return i + 5, true
	case bytes.HasPrefix(d[i:], []byte("null")):
		return i + 4, true
	}
	return i, false
}

// object checks an object below the top: its keys must be sorted.
func (s *canonScanner) object(i, depth int) (int, bool) {
	d := s.data
	i++ // {
	if i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		key, end, ok := s.key(i)
		if !ok || end >= len(d) || d[end] != ':' || (!first && bytes.Compare(prev, key) >= 0) {
			return i, false
		}
		prev = key
		if i, ok = s.value(end+1, depth); !ok || i >= len(d) {
			return i, false
		}
		switch d[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return i, false
		}
	}
}

// array checks an array.
func (s *canonScanner) array(i, depth int) (int, bool) {
	d := s.data
	i++ // [
	if i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = s.value(i, depth); !ok || i >= len(d) {
			return i, false
		}
		switch d[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
		default:
			return i, false
		}
	}
}

// key checks an object key at i and returns its text, which is what it
// decodes to: a key with escapes sorts by what they stand for, so it is
// left to the general way.
func (s *canonScanner) key(i int) (key []byte, end int, ok bool) {
	plain, end, ok := s.str(i)
	if !ok || !plain {
		return nil, end, false
	}
	return s.data[i+1 : end-1], end, true
}

// str checks a string at i: raw characters where json.Marshal writes them
// raw, and only the escapes it writes where it writes them. plain reports
// that it has no escapes.
func (s *canonScanner) str(i int) (plain bool, end int, ok bool) {
	d := s.data
	if i >= len(d) || d[i] != '"' {
		return false, i, false
	}
	plain = true
	for i++; i < len(d); {
		c := d[i]
		switch {
		case c == '"':
			return plain, i + 1, true
		case c == '\\':
			n, ok := s.escape(i)
			if !ok {
				return false, i, false
			}
			plain = false
			i += n
		case marshalEscapes(c):
			return false, i, false // json.Marshal escapes these
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
				return false, i, false // replaced, or escaped
			}
			i += size
		}
	}
	return false, i, false
}

// escape checks the escape at i, returning its length: it must be the one
// json.Marshal writes for a character it escapes.
func (s *canonScanner) escape(i int) (int, bool) {
	d := s.data
	if i+1 >= len(d) {
		return 0, false
	}
	var c rune
	n := 2
	switch e := d[i+1]; e {
	case '"', '\\':
		c = rune(e)
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		if i+6 > len(d) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(d[i+2:i+6]), 16, 16)
		if err != nil {
			return 0, false
		}
		c, n = rune(v), 6
	default:
		return 0, false
	}
	// What appendPlainString writes for c alone, inside the quotes: the
	// escape itself when json.Marshal escapes c, else c, which differs.
	var want [16]byte
	w, ok := appendPlainString(want[:0], string(c))
	return n, ok && bytes.Equal(d[i:i+n], w[1:len(w)-1])
}

// number checks a number at i: JSON's grammar, written as json.Marshal
// writes the float64 it decodes to.
func (s *canonScanner) number(i int) (int, bool) {
	d := s.data
	start := i
	if d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil {
		return i, false
	}
	var ok bool
	if s.num, ok = appendFloat(s.num[:0], f); !ok || !bytes.Equal(s.num, d[start:i]) {
		return i, false
	}
	return i, true
}
