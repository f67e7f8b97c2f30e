package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// checkJSONData refuses JSON that is not UTF-8 or nests objects and arrays
// deeper than MaxDataDepth, before it is decoded. It does not validate the
// syntax: the decoder does.
func checkJSONData(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("invalid UTF-8")
	}
	depth := 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDataDepth {
				return errTooDeep
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// checkMsgpackData walks msgpack data without decoding it and refuses what
// the decoder should never see: anything but exactly one well-formed value,
// lengths that claim more bytes or elements than the data holds (each
// element takes at least one byte, so a header claiming four billion of
// them costs nothing), strings that are not UTF-8, and nesting deeper than
// MaxDataDepth. The walk is iterative.
func checkMsgpackData(b []byte) error {
	pending := []uint64{1} // values still to read at each open level
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
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
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
		if container {
			if err := need(items); err != nil {
				return err
			}
			if len(pending) > MaxDataDepth {
				return errTooDeep
			}
			pending = append(pending, items)
			continue
		}
		if err := need(skip); err != nil {
			return err
		}
		if isStr && !utf8.Valid(b[pos:pos+int(skip)]) {
			return fmt.Errorf("invalid UTF-8 in the string at byte %d", pos)
		}
		pos += int(skip)
	}
	if pos != len(b) {
		return fmt.Errorf("%d bytes after the value", len(b)-pos)
	}
	return nil
}
