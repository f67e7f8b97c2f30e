package processors

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/convstream/convstream/internal/jsvalue"
)

// A small parser for JSON cut short, as tool-call arguments are when a
// model's output is truncated: unterminated strings, arrays and objects
// are closed, a dangling key or a partial literal is dropped or completed.
// It keeps object key order so a repaired value re-serialises like the
// original.

var (
	errPartialJSON   = errors.New("incomplete JSON")
	errMalformedJSON = errors.New("malformed JSON")
)

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is a parsed JSON value with ordered object members.
type jsonValue struct {
	kind    jsonKind
	boolean bool
	number  float64
	text    string
	items   []jsonValue // array items, or object values
	keys    []string    // object keys, parallel to items
}

func (v *jsonValue) set(key string, val jsonValue) {
	for i, k := range v.keys {
		if k == key {
			v.items[i] = val
			return
		}
	}
	v.keys = append(v.keys, key)
	v.items = append(v.items, val)
}

// maxPartialJSONDepth bounds the nesting the parser follows, as
// encoding/json's scanner does for complete JSON: deeper input is
// malformed. Each level is a recursive call; without a bound a tool call's
// arguments of a megabyte of "[" overflowed the goroutine's stack, a fatal
// error no recover catches (TestSanitizeToolArgumentsDeep).
const maxPartialJSONDepth = 10_000

type partialParser struct {
	s     string
	i     int
	depth int // arrays and objects open at the cursor
}

// parsePartialJSON parses s, completing what a truncation cut off. It fails
// on input that is malformed rather than merely incomplete.
func parsePartialJSON(s string) (jsonValue, error) {
	s = trimJS(s)
	if s == "" {
		return jsonValue{}, errPartialJSON
	}
	p := &partialParser{s: s}
	v, err := p.any()
	if err != nil {
		return jsonValue{}, err
	}
	p.skip()
	if p.i < len(p.s) {
		return jsonValue{}, errMalformedJSON
	}
	return v, nil
}

func (p *partialParser) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \n\r\t", p.s[p.i]) >= 0 {
		p.i++
	}
}

// literal matches word at the cursor, or a prefix of it ending the input.
func (p *partialParser) literal(word string) bool {
	rest := p.s[p.i:]
	if strings.HasPrefix(rest, word) || len(rest) < len(word) && strings.HasPrefix(word, rest) {
		p.i = min(p.i+len(word), len(p.s))
		return true
	}
	return false
}

func (p *partialParser) any() (jsonValue, error) {
	p.skip()
	if p.i >= len(p.s) {
		return jsonValue{}, errPartialJSON
	}
	switch p.s[p.i] {
	case '"':
		s, err := p.str()
		return jsonValue{kind: jsonString, text: s}, err
	case '{', '[':
		return p.nested()
	}
	switch {
	case p.literal("null"):
		return jsonValue{kind: jsonNull}, nil
	case p.literal("true"):
		return jsonValue{kind: jsonBool, boolean: true}, nil
	case p.literal("false"):
		return jsonValue{kind: jsonBool}, nil
	case p.literal("Infinity"), len(p.s)-p.i > 1 && p.literal("-Infinity"), p.literal("NaN"):
		// Non-finite numbers serialise as null.
		return jsonValue{kind: jsonNull}, nil
	}
	return p.num()
}

// nested parses the object or array at the cursor, one level deeper.
func (p *partialParser) nested() (jsonValue, error) {
	if p.depth == maxPartialJSONDepth {
		return jsonValue{}, errMalformedJSON
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.s[p.i] == '{' {
		return p.object()
	}
	return p.array()
}

func (p *partialParser) str() (string, error) {
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.s) && (p.s[p.i] != '"' || escaped) {
		escaped = p.s[p.i] == '\\' && !escaped
		p.i++
	}
	if p.i < len(p.s) {
		p.i++
		var out string
		if err := json.Unmarshal([]byte(p.s[start:p.i]), &out); err != nil {
			return "", errMalformedJSON
		}
		return out, nil
	}
	// Unterminated: close the string, dropping a dangling escape.
	body := p.s[start:p.i]
	if escaped {
		body = body[:len(body)-1]
	}
	var out string
	if err := json.Unmarshal([]byte(body+`"`), &out); err == nil {
		return out, nil
	}
	cut := strings.LastIndexByte(body, '\\')
	if cut < 0 {
		return "", errMalformedJSON
	}
	if err := json.Unmarshal([]byte(body[:cut]+`"`), &out); err != nil {
		return "", errMalformedJSON
	}
	return out, nil
}

func (p *partialParser) object() (jsonValue, error) {
	p.i++
	v := jsonValue{kind: jsonObject}
	p.skip()
	for p.i >= len(p.s) || p.s[p.i] != '}' {
		p.skip()
		if p.i >= len(p.s) {
			return v, nil
		}
		if p.s[p.i] != '"' {
			return v, errMalformedJSON
		}
		key, err := p.str()
		if err != nil {
			return v, err
		}
		p.skip()
		if p.i >= len(p.s) {
			return v, nil
		}
		if p.s[p.i] != ':' {
			return v, errMalformedJSON
		}
		p.i++
		val, err := p.any()
		if errors.Is(err, errPartialJSON) {
			return v, nil
		}
		if err != nil {
			return v, err
		}
		v.set(key, val)
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.skip()
		} else if p.i < len(p.s) && p.s[p.i] != '}' {
			return v, errMalformedJSON
		}
	}
	p.i++
	return v, nil
}

func (p *partialParser) array() (jsonValue, error) {
	p.i++
	v := jsonValue{kind: jsonArray}
	p.skip()
	for p.i >= len(p.s) || p.s[p.i] != ']' {
		item, err := p.any()
		if errors.Is(err, errPartialJSON) {
			return v, nil
		}
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.skip()
		} else if p.i < len(p.s) && p.s[p.i] != ']' {
			return v, errMalformedJSON
		}
	}
	p.i++
	return v, nil
}

// partialNumber matches a number cut after its decimal point or exponent
// mark; the complete prefix is kept.
var partialNumber = regexp.MustCompile(`^(-?(?:0|[1-9]\d*)(?:\.\d+)?)[eE][+-]?$|^(-?(?:0|[1-9]\d*))\.$`)

func (p *partialParser) num() (jsonValue, error) {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(",]} \n\r\t", p.s[p.i]) < 0 {
		p.i++
	}
	token := p.s[start:p.i]
	atEnd := p.i == len(p.s)
	if f, ok := parseJSONNumber(token); ok {
		return jsonValue{kind: jsonNumber, number: f}, nil
	}
	if token == "-" && atEnd && start > 0 {
		return jsonValue{}, errPartialJSON
	}
	if atEnd {
		if m := partialNumber.FindStringSubmatch(token); m != nil {
			f, _ := parseJSONNumber(m[1] + m[2])
			return jsonValue{kind: jsonNumber, number: f}, nil
		}
	}
	return jsonValue{}, errMalformedJSON
}

// parseJSONNumber parses token if it is a complete JSON number.
func parseJSONNumber(token string) (float64, bool) {
	if token == "" || !json.Valid([]byte(token)) || token[0] != '-' && (token[0] < '0' || token[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(token, 64)
	if err != nil {
		// Out of range numbers parse to ±Inf in JavaScript.
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// appendJSON serialises v as JavaScript's JSON.stringify does.
func (v jsonValue) appendJSON(b []byte) []byte {
	switch v.kind {
	case jsonNull:
		return append(b, "null"...)
	case jsonBool:
		return strconv.AppendBool(b, v.boolean)
	case jsonNumber:
		if v.number != v.number || v.number > 1.7976931348623157e308 || v.number < -1.7976931348623157e308 {
			return append(b, "null"...)
		}
		return append(b, formatNumber(v.number)...)
	case jsonString:
		return appendJSONString(b, v.text)
	case jsonArray:
		b = append(b, '[')
		for i, item := range v.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = item.appendJSON(b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, k := range v.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = v.items[i].appendJSON(b)
	}
	return append(b, '}')
}

// appendJSONString appends s as JSON.stringify writes it.
func appendJSONString(b []byte, s string) []byte { return jsvalue.AppendJSONString(b, s) }
