package conversation

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A message keeps its fields as compact JSON (see Message). The code here
// reads and edits that JSON. The decoder reads it back into the values
// encoding/json decodes to (nil, bool, float64, string, []any,
// map[string]any), faster than encoding/json does and without copying: a
// string without escapes is a substring of the source. It reads any valid
// JSON (and is lenient with some invalid JSON), but it is meant for what
// json.Marshal wrote; on input it cannot read it reports an error, never
// panics.

var errBadJSON = errors.New("conversation: malformed stored JSON")

// maxJSONDepth bounds the nesting the decoder follows, as encoding/json's
// does, so that no input exhausts the stack.
const maxJSONDepth = 10000

// jsonDecoder reads one JSON text from s.
type jsonDecoder struct {
	s     string
	i     int
	depth int
	bad   bool
}

// decodeObject decodes s, which must hold one JSON object of about n
// fields.
func decodeObject(s string, n int) (map[string]any, error) {
	obj, _, err := decodeObjectOf(s, n, nil)
	return obj, err
}

// decodeIndexed decodes the JSON object s as decodeObject does, but only
// the fields Message.index reads (indexedField); the others, the content
// among them, are skipped. n is the number of all the fields.
func decodeIndexed(s string) (fields map[string]any, n int, err error) {
	return decodeObjectOf(s, 8, indexedField)
}

// decodeObjectOf decodes s, which must hold one JSON object of about n
// fields, keeping the fields keep reports (every one when keep is nil),
// and counts them all.
func decodeObjectOf(s string, n int, keep func(string) bool) (map[string]any, int, error) {
	d := jsonDecoder{s: s}
	d.space()
	if d.peek() != '{' {
		return nil, 0, errBadJSON
	}
	obj, count := d.members(n, keep)
	d.space()
	if d.bad || d.i != len(d.s) {
		return nil, 0, errBadJSON
	}
	return obj, count, nil
}

// indexedField reports whether Message.index, or what it calls, reads the
// top-level field k. A field read there and missing here would be indexed
// as absent from messages read back from a checkpoint
// (TestNewMessageCanonicalReadsBackJSON compares them with NewMessage's).
func indexedField(k string) bool {
	switch k {
	case "id", "role", "parentId", "threadId", "groupId", "agentId", "tool_call_id", "tools",
		"createdAt", "updatedAt", "metadata", "usage",
		// lastCompressedID, for compressed groups
		"lastMessageId", "compressedMessages", "children":
		return true
	}
	return false
}

// lookupField decodes field name of the JSON object s, without decoding the
// others.
func lookupField(s, name string) (any, bool) {
	d := jsonDecoder{s: s}
	d.space()
	if !d.consume('{') {
		return nil, false
	}
	d.space()
	if d.consume('}') {
		return nil, false
	}
	for !d.bad {
		k, ok := d.key()
		if !ok {
			return nil, false
		}
		if k == name {
			v := d.value()
			return v, !d.bad
		}
		d.skip()
		d.space()
		if !d.consume(',') {
			return nil, false
		}
	}
	return nil, false
}

// pickFields decodes the fields of the JSON object s that names lists into
// a map, skipping the others without decoding them.
func pickFields(s string, names []string) map[string]any {
	out := make(map[string]any, len(names))
	d := jsonDecoder{s: s}
	d.space()
	if !d.consume('{') {
		return out
	}
	d.space()
	if d.consume('}') {
		return out
	}
	for !d.bad {
		k, ok := d.key()
		if !ok {
			return out
		}
		if slices.Contains(names, k) {
			out[k] = d.value()
		} else {
			d.skip()
		}
		d.space()
		if !d.consume(',') {
			return out
		}
	}
	return out
}

// fieldCount returns the number of fields of the JSON object s.
func fieldCount(s string) int {
	d := jsonDecoder{s: s}
	d.space()
	if !d.consume('{') {
		return 0
	}
	d.space()
	if d.peek() == '}' {
		return 0
	}
	return d.countFields()
}

func (d *jsonDecoder) peek() byte {
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

func (d *jsonDecoder) consume(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// space skips whitespace, which the canonical form never has.
func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value() any {
	switch c := d.peek(); {
	case c == '{' || c == '[':
		if d.depth++; d.depth > maxJSONDepth {
			d.bad = true
			return nil
		}
		defer func() { d.depth-- }()
		if c == '{' {
			return d.object(0)
		}
		return d.array()
	case c == '"':
		s, escaped := d.rawString()
		if escaped {
			return unquoteJSON(s)
		}
		return s
	case c == 't':
		return d.literal("true", true)
	case c == 'f':
		return d.literal("false", false)
	case c == 'n':
		return d.literal("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	d.bad = true
	return nil
}

// key reads an object member's name and the colon after it, with the
// spaces around them.
func (d *jsonDecoder) key() (string, bool) {
	d.space()
	k, escaped := d.rawString()
	if escaped {
		k = unquoteJSON(k)
	}
	d.space()
	if !d.consume(':') {
		return "", false
	}
	d.space()
	return k, true
}

// object reads an object of about n fields.
func (d *jsonDecoder) object(n int) map[string]any {
	obj, _ := d.members(n, nil)
	return obj
}

// members reads an object of about n fields as object does, keeping only
// the fields keep reports (every one when keep is nil: the others are
// skipped), and returns how many fields it read.
func (d *jsonDecoder) members(n int, keep func(string) bool) (map[string]any, int) {
	d.i++ // '{'
	d.space()
	obj := make(map[string]any, n)
	if d.consume('}') {
		return obj, 0
	}
	count := 0
	for !d.bad {
		k, ok := d.key()
		if !ok {
			d.bad = true
			return obj, count
		}
		count++
		if keep == nil || keep(k) {
			obj[k] = d.value()
		} else {
			d.skip()
		}
		d.space()
		if d.consume('}') {
			return obj, count
		}
		if !d.consume(',') {
			d.bad = true
		}
	}
	return obj, count
}

func (d *jsonDecoder) array() []any {
	d.i++ // '['
	d.space()
	if d.consume(']') {
		return []any{}
	}
	var arr []any
	for !d.bad {
		d.space()
		arr = append(arr, d.value())
		d.space()
		if d.consume(']') {
			return arr
		}
		if !d.consume(',') {
			d.bad = true
		}
	}
	return arr
}

// setRawField returns the JSON object s with field name set to the JSON
// value enc, as encoding/json would encode the object's map with that
// change: the field keeps its place in key order.
func setRawField(s, name string, enc []byte) (string, bool) {
	keyEnc, err := json.Marshal(name)
	if err != nil {
		return "", false
	}
	field := string(keyEnc) + ":" + string(enc)
	d := jsonDecoder{s: s}
	if !d.consume('{') {
		return "", false
	}
	if d.consume('}') {
		return "{" + field + "}", d.i == len(s)
	}
	for !d.bad {
		start := d.i
		k, escaped := d.rawString()
		if escaped {
			k = unquoteJSON(k)
		}
		if !d.consume(':') {
			return "", false
		}
		valStart := d.i
		d.skip()
		if d.bad {
			return "", false
		}
		switch strings.Compare(k, name) {
		case 0:
			return s[:valStart] + string(enc) + s[d.i:], true
		case 1:
			return s[:start] + field + "," + s[start:], true
		}
		if d.consume(',') {
			continue
		}
		if d.peek() != '}' {
			return "", false
		}
		return s[:d.i] + "," + field + s[d.i:], true
	}
	return "", false
}

// countFields counts the fields of the object whose contents start at d.i,
// without moving d.
func (d *jsonDecoder) countFields() int {
	saved := d.i
	n := 1
	for d.i < len(d.s) && !d.bad {
		d.skip() // a key or a value
		d.space()
		switch d.peek() {
		case ',':
			n++
		case ':':
		default:
			d.i = saved
			return n
		}
		d.i++
		d.space()
	}
	d.i = saved
	return n
}

// skip moves past one value.
func (d *jsonDecoder) skip() {
	switch d.peek() {
	case '"':
		d.rawString()
	case '{', '[':
		depth := 0
		for d.i < len(d.s) {
			switch d.s[d.i] {
			case '"':
				d.rawString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.i++
					return
				}
			}
			d.i++
		}
		d.bad = true
	default: // a number or a literal
		for d.i < len(d.s) && strings.IndexByte(",:]} \t\n\r", d.s[d.i]) < 0 {
			d.i++
		}
	}
}

// rawString reads a string token and returns its contents unprocessed, and
// whether they hold escapes.
func (d *jsonDecoder) rawString() (string, bool) {
	if !d.consume('"') {
		d.bad = true
		return "", false
	}
	start := d.i
	escaped := false
	for {
		j := strings.IndexByte(d.s[d.i:], '"')
		if j < 0 {
			d.i = len(d.s)
			d.bad = true
			return "", false
		}
		end := d.i + j
		if strings.IndexByte(d.s[d.i:end], '\\') < 0 {
			d.i = end + 1
			return d.s[start:end], escaped
		}
		escaped = true
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := end - 1; k >= start && d.s[k] == '\\'; k-- {
			n++
		}
		d.i = end + 1
		if n%2 == 0 {
			return d.s[start:end], escaped
		}
	}
}

func (d *jsonDecoder) literal(word string, v any) any {
	if !strings.HasPrefix(d.s[d.i:], word) {
		d.bad = true
		return nil
	}
	d.i += len(word)
	return v
}

func (d *jsonDecoder) number() any {
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil {
		d.bad = true
		return nil
	}
	return f
}

// unquoteJSON resolves the escapes of a JSON string's contents as
// encoding/json does: a lone surrogate becomes U+FFFD.
func unquoteJSON(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := strings.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s) - i
			}
			b.WriteString(s[i : i+j])
			i += j
			continue
		}
		if i+1 >= len(s) {
			break
		}
		i += 2
		switch s[i-1] {
		case '"', '\\', '/':
			b.WriteByte(s[i-1])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(s[i:])
			if r < 0 {
				b.WriteRune(unicode.ReplacementChar)
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if len(s) >= i+6 && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, hex4(s[i+2:])); dec != unicode.ReplacementChar {
						b.WriteRune(dec)
						i += 6
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			if !utf8.ValidRune(r) {
				r = unicode.ReplacementChar
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hex4 reads four hex digits, or returns -1.
func hex4(s string) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
