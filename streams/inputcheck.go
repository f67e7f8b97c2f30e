package streams

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDataDepth is how deeply objects and arrays may nest in event data.
// Real messages nest a few levels (metadata, tool calls); the bound keeps
// a hostile event from costing a deep recursion in the decoders and in
// everything that walks the data afterwards.
const MaxDataDepth = 128

// errTooDeep reports data nested beyond MaxDataDepth.
var errTooDeep = fmt.Errorf("nested deeper than %d levels", MaxDataDepth)

// hasControl reports whether s holds a C0 control character, DEL or a C1
// control character: they have no place in an identifier and would
// reach logs and terminals verbatim.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return true
		}
	}
	return false
}

// dataError is a fault checkJSONData or checkMsgpackData found in event
// data, at path (as dataWalk.path writes it, "" for the data itself). validate
// turns it into a bad_data rejection naming data.<path>.
type dataError struct {
	path string
	msg  string
}

func (e *dataError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// dataFrame is one open object or array of a walk over event data.
type dataFrame struct {
	object bool
	index  int    // arrays: the element being read
	key    []byte // objects: the member being read, as it decodes
	// keys are the object's keys so far (as they decode), kept in
	// dataWalk.keys from keysFrom on; seen takes over for large objects,
	// so that a hostile object of 100,000 keys is not checked in
	// quadratic time.
	keysFrom int
	seen     map[string]struct{}
}

// dataWalk tracks the open objects and arrays of a walk over event data:
// the path to where it is, and the keys each object has had.
type dataWalk struct {
	frames []dataFrame
	keys   [][]byte
}

// walks keeps dataWalks for reuse: a walk's levels and keys take no
// allocation once its slices have grown to what events need. A new walk
// for each event cost it five allocations (BenchmarkValidateAppend: 17
// against 12) and, given room up front instead, 1.3 KB that made the
// checks several times slower than the walk itself.
var walks = sync.Pool{New: func() any { return new(dataWalk) }}

// getDataWalk returns an empty walk; putDataWalk gives it back.
func getDataWalk() *dataWalk { return walks.Get().(*dataWalk) }

// putDataWalk gives back a walk, forgetting the keys and maps it held so
// that it keeps no event's memory alive.
func putDataWalk(w *dataWalk) {
	clear(w.frames[:cap(w.frames)])
	clear(w.keys[:cap(w.keys)])
	w.frames, w.keys = w.frames[:0], w.keys[:0]
	walks.Put(w)
}

// smallObject is how many keys an object's duplicates are looked for by
// comparing each new key with those before it.
const smallObject = 16

func (w *dataWalk) open(object bool) {
	w.frames = append(w.frames, dataFrame{object: object, keysFrom: len(w.keys)})
}

func (w *dataWalk) close() {
	if n := len(w.frames); n > 0 {
		w.keys = w.keys[:w.frames[n-1].keysFrom]
		w.frames = w.frames[:n-1]
	}
}

// key records the key of the member now read in the innermost object,
// its escapes resolved, and refuses one the object already has:
// JSON leaves duplicate names undefined (RFC 8259 §4; I-JSON, RFC 7493,
// forbids them), decoders keep the first or the last, and so consumers of
// the same event would disagree on what it says.
func (w *dataWalk) key(decoded []byte) error {
	f := &w.frames[len(w.frames)-1]
	f.key = decoded
	if f.seen != nil {
		if _, dup := f.seen[string(decoded)]; dup {
			return w.fault("duplicate key")
		}
		f.seen[string(decoded)] = struct{}{}
		return nil
	}
	for _, k := range w.keys[f.keysFrom:] {
		if bytes.Equal(k, decoded) {
			return w.fault("duplicate key")
		}
	}
	w.keys = append(w.keys, decoded)
	if len(w.keys)-f.keysFrom > smallObject {
		f.seen = make(map[string]struct{}, 2*smallObject)
		for _, k := range w.keys[f.keysFrom:] {
			f.seen[string(k)] = struct{}{}
		}
		w.keys = w.keys[:f.keysFrom]
	}
	return nil
}

// next moves the innermost array to its next element.
func (w *dataWalk) next() {
	if n := len(w.frames); n > 0 && !w.frames[n-1].object {
		w.frames[n-1].index++
	}
}

// fault returns a dataError at the walk's path.
func (w *dataWalk) fault(msg string) *dataError {
	return &dataError{path: w.path(), msg: msg}
}

// maxPathBytes bounds the path a rejection names: a hostile key may be
// as long as the event.
const maxPathBytes = 256

// path returns where the walk is, as JavaScript would write it:
// metadata.tools[2].id, ["a key"] for a key that is no identifier.
func (w *dataWalk) path() string {
	var b []byte
	for i, f := range w.frames {
		switch {
		case !f.object:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(f.index), 10)
			b = append(b, ']')
		case f.key == nil:
		case isIdentifier(f.key):
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, f.key...)
		default:
			b = append(b, '[')
			b = strconv.AppendQuote(b, string(f.key))
			b = append(b, ']')
		}
		if len(b) > maxPathBytes {
			return string(b[:maxPathBytes]) + "…"
		}
	}
	return string(b)
}

// isIdentifier reports whether a key needs no brackets in a path.
func isIdentifier(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// checkJSONData refuses JSON that is not UTF-8, nests objects and arrays
// deeper than MaxDataDepth, holds a \u escape of a lone UTF-16 surrogate
// (no Unicode text: a decoder replaces it or keeps it, I-JSON forbids it)
// or an object with a key twice, before it is decoded. It does not
// validate the syntax: the decoder does. Its faults are *dataError.
func checkJSONData(raw []byte) error {
	// Text that is not UTF-8 is walked string by string to name where.
	valid := utf8.Valid(raw)
	w := getDataWalk()
	defer putDataWalk(w)
	expectKey := false // the next string is an object's key
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			end, plain, err := scanJSONString(raw, i)
			if err != nil {
				return w.fault(err.Error())
			}
			if expectKey && len(w.frames) > 0 {
				w.frames[len(w.frames)-1].key = nil // the path is the object's
			}
			if !valid && !utf8.Valid(raw[i+1:end]) {
				return w.fault("invalid UTF-8")
			}
			if expectKey && len(w.frames) > 0 {
				decoded := raw[i+1 : end]
				if !plain {
					var s string
					if json.Unmarshal(raw[i:end+1], &s) != nil {
						return nil // the decoder names the syntax error
					}
					decoded = []byte(s)
				}
				if err := w.key(decoded); err != nil {
					return err
				}
				expectKey = false
			}
			i = end
		case '{', '[':
			if len(w.frames) >= MaxDataDepth {
				return errTooDeep
			}
			w.open(c == '{')
			expectKey = c == '{'
		case '}', ']':
			w.close()
			expectKey = false
		case ',':
			if n := len(w.frames); n > 0 && w.frames[n-1].object {
				expectKey = true
			}
			w.next()
		}
	}
	if !valid {
		return &dataError{msg: "invalid UTF-8"}
	}
	return nil
}

// errLoneSurrogate names a \u escape of half a UTF-16 surrogate pair.
var errLoneSurrogate = errors.New("a \\u escape of a lone UTF-16 surrogate is not Unicode text")

// scanJSONString returns the index of the quote closing the string whose
// opening quote is at raw[i], whether the string has no escapes, and
// errLoneSurrogate for a surrogate escape not in a pair. An unterminated
// string ends at len(raw).
func scanJSONString(raw []byte, i int) (end int, plain bool, err error) {
	plain = true
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '"':
			return j, plain, nil
		case '\\':
			plain = false
			if j+1 < len(raw) && raw[j+1] == 'u' {
				r, ok := hex4(raw, j+2)
				switch {
				case !ok:
				case r >= 0xdc00 && r <= 0xdfff:
					return j, false, errLoneSurrogate
				case r >= 0xd800 && r <= 0xdbff:
					if lo, ok := hex4(raw, j+8); !ok || raw[j+6] != '\\' || raw[j+7] != 'u' || lo < 0xdc00 || lo > 0xdfff {
						return j, false, errLoneSurrogate
					}
					j += 6
				}
				j += 4
			}
			j++
		}
	}
	return len(raw), plain, nil
}

// hex4 reads the four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		h := unhex(c)
		if h < 0 {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// checkMsgpackData walks msgpack data without decoding it and refuses what
// the decoder should never see: anything but exactly one well-formed value,
// lengths that claim more bytes or elements than the data holds (each
// element takes at least one byte, so a header claiming four billion of
// them costs nothing), strings that are not UTF-8, nesting deeper than
// MaxDataDepth, and maps with a key twice (see dataWalk.key). The walk is
// iterative.
func checkMsgpackData(b []byte) error {
	pending := []uint64{1} // values still to read at each open level
	total := []uint64{1}   // values each open level holds
	w := getDataWalk()     // the open levels but the first
	defer putDataWalk(w)
	pos := 0
	need := func(n uint64) error {
		if n > uint64(len(b)-pos) {
			return fmt.Errorf("truncated at byte %d: %d more bytes claimed, %d left", pos, n, len(b)-pos)
		}
		return nil
	}
	uintN := func(n int) (uint64, error) {
		if err := need(uint64(n)); err != nil {
			return 0, err
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += n
		return v, nil
	}
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending, total = pending[:top], total[:top]
			w.close()
			continue
		}
		// In a map, keys come at even counts from its end.
		isKey := top > 0 && w.frames[top-1].object && pending[top]%2 == 0
		if top > 0 && !w.frames[top-1].object && pending[top] != total[top] {
			w.next()
		}
		pending[top]--
		if err := need(1); err != nil {
			return err
		}
		c := b[pos]
		pos++
		var (
			skip      uint64 // bytes of payload to skip
			items     uint64 // elements of a container
			container bool
			isStr     bool
			err       error
		)
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items, container = 2*uint64(c&0x0f), true
		case c >= 0x90 && c <= 0x9f:
			items, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			skip, isStr = uint64(c&0x1f), true
		case c == 0xc4 || c == 0xd9:
			skip, err = uintN(1)
			isStr = c == 0xd9
		case c == 0xc5 || c == 0xda:
			skip, err = uintN(2)
			isStr = c == 0xda
		case c == 0xc6 || c == 0xdb:
			skip, err = uintN(4)
			isStr = c == 0xdb
		case c == 0xc7, c == 0xc8, c == 0xc9: // ext 8/16/32: length, type, data
			skip, err = uintN(1 << (c - 0xc7))
			skip++
		case c == 0xca, c == 0xce, c == 0xd2:
			skip = 4
		case c == 0xcb, c == 0xcf, c == 0xd3:
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1..16 plus its type byte
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc, c == 0xdd:
			items, err = uintN(2 << (c - 0xdc))
			container = true
		case c == 0xde, c == 0xdf:
			items, err = uintN(2 << (c - 0xde))
			items *= 2
			container = true
		default: // 0xc1 is never used
			return fmt.Errorf("invalid byte 0x%02x at %d", c, pos-1)
		}
		if err != nil {
			return err
		}
		if isKey {
			w.frames[top-1].key = nil // the path is the map's
			if !isStr {
				// msgpack's decoder would read some as strings ("" for
				// nil); JSON, and so the schemas, have only string keys.
				return w.fault("a map key must be a string")
			}
		}
		if container {
			if err := need(items); err != nil {
				return err
			}
			if len(pending) > MaxDataDepth {
				return errTooDeep
			}
			pending, total = append(pending, items), append(total, items)
			w.open(c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf)
			continue
		}
		if err := need(skip); err != nil {
			return err
		}
		if isStr && !utf8.Valid(b[pos:pos+int(skip)]) {
			return w.fault(fmt.Sprintf("invalid UTF-8 in the string at byte %d", pos))
		}
		if isKey {
			if err := w.key(b[pos : pos+int(skip)]); err != nil {
				return err
			}
		}
		pos += int(skip)
	}
	if pos != len(b) {
		return fmt.Errorf("%d bytes after the value", len(b)-pos)
	}
	return nil
}
