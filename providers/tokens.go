package providers

import (
	"unicode"
	"unicode/utf8"
)

// A Counter counts the tokens a model reads for a text.
type Counter interface {
	Count(text string) int
}

// Estimator is the default Counter: an estimate from the text's shape,
// without a vocabulary. A run of ASCII letters or digits costs one token,
// and one more for every six bytes past its first; a run of ASCII
// punctuation one token for every two characters, rounded up (BPE
// vocabularies hold "()", "**", "---" as one); any other character one
// token (a character of a script written without spaces is about one, and
// BPE vocabularies split accented words and emoji about there); white
// space nothing. Its error against OpenAI's o200k_base and cl100k_base is
// in BENCHMARKS.md ("Token estimate and budget") and TestEstimatorError
// (providers/bpe).
type Estimator struct{}

// Count implements Counter.
func (Estimator) Count(s string) int {
	n, run, punct := 0, 0, 0
	flush := func() {
		if run > 0 {
			n += 1 + (run-1)/6
			run = 0
		}
		if punct > 0 {
			n += (punct + 1) / 2
			punct = 0
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			if punct > 0 {
				flush()
			}
			run++
		case r >= utf8.RuneSelf:
			flush()
			n++
		case unicode.IsSpace(r):
			flush()
		case r < utf8.RuneSelf:
			if run > 0 {
				flush()
			}
			punct++
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

// Per-message and per-image costs added to the text's tokens, after
// OpenAI's accounting for chat messages: a few tokens frame each message,
// and an image costs what a 512×512 tile at high detail costs plus the
// base (gpt-4o: 170 + 85).
const (
	messageTokens = 4
	imageTokens   = 255
)

// BodyTokens counts a request body as a provider reads it, by this rule:
//
//   - messageTokens (4) for each message, content or input item and for the
//     system prompt, which frame it;
//   - every string value by c, ids and names included, except the values
//     of role, type and cache_control, which the frame stands for;
//   - the JSON text of a call's arguments (input, args), a function
//     response and each tool declaration whole, keys included, since the
//     model reads them as text;
//   - imageTokens (255) for each image, whatever its bytes.
//
// Numbers and booleans (max_tokens) count nothing. The budget holds a
// body to it (Budget); BENCHMARKS.md has its error against o200k_base and
// cl100k_base.
func BodyTokens(body map[string]any, c Counter) int {
	if c == nil {
		c = Estimator{}
	}
	n := 0
	for k, v := range body {
		switch k {
		case "messages", "contents", "input":
			for _, m := range items(v) {
				n += messageTokens + valueTokens(m, c)
			}
		case "system", "systemInstruction":
			n += messageTokens + valueTokens(v, c)
		case "tools":
			for _, t := range items(v) {
				n += messageTokens + c.Count(jsonText(withoutCache(t)))
			}
		default:
			n += valueTokens(v, c)
		}
	}
	return n
}

// items returns a body's list, written as []any or []map[string]any.
func items(v any) []any {
	if l, ok := v.([]map[string]any); ok {
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out
	}
	return asList(v)
}

// valueTokens counts a JSON value of a body by BodyTokens' rule.
func valueTokens(v any, c Counter) int {
	switch x := v.(type) {
	case string:
		return c.Count(x)
	case []any:
		n := 0
		for _, e := range x {
			n += valueTokens(e, c)
		}
		return n
	case []map[string]any:
		n := 0
		for _, e := range x {
			n += valueTokens(e, c)
		}
		return n
	case map[string]any:
		if isImage(x) {
			return imageTokens
		}
		n := 0
		for k, e := range x {
			switch k {
			case "role", "type", "cache_control":
			case "input", "args", "response":
				if _, ok := e.(map[string]any); ok {
					n += c.Count(jsonText(e))
					continue
				}
				n += valueTokens(e, c)
			default:
				n += valueTokens(e, c)
			}
		}
		return n
	}
	return 0
}

// isImage reports whether a body's object is an image: an Anthropic image
// block, a Gemini inlineData or fileData part, an OpenAI image_url or
// input_image part.
func isImage(m map[string]any) bool {
	switch m["type"] {
	case "image", "image_url", "input_image":
		return true
	}
	_, inline := m["inlineData"]
	_, file := m["fileData"]
	return inline || file
}

// withoutCache returns a tool declaration without its cache_control.
func withoutCache(t any) any {
	m, ok := t.(map[string]any)
	if !ok || m["cache_control"] == nil {
		return t
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "cache_control" {
			out[k] = v
		}
	}
	return out
}

// turnTokens counts what a turn costs: its frame, its text and images, and
// for each call its frame, id, name and arguments; a tool turn also its
// call's id and name.
func turnTokens(t turn, c Counter) int {
	n := messageTokens
	for _, p := range t.parts {
		if p.image != "" {
			n += imageTokens
			continue
		}
		n += c.Count(p.text)
	}
	for _, call := range t.calls {
		n += messageTokens + c.Count(call.id) + c.Count(call.name) + c.Count(call.arguments)
	}
	if t.role == "tool" {
		n += c.Count(t.callID) + c.Count(t.name)
	}
	return n
}
