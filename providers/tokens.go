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
// without a vocabulary. A run of letters or digits costs one token, and
// one more for every five bytes past its first, a character of a script written
// without spaces (Han, kana, Hangul, Thai) one token, other punctuation
// and symbols one token each, and white space nothing. Against OpenAI's
// o200k_base over the conformance corpus its error is in
// TestEstimatorError (providers/bpe).
type Estimator struct{}

// Count implements Counter.
func (Estimator) Count(s string) int {
	n, run := 0, 0
	flush := func() {
		if run > 0 {
			n += 1 + (run-1)/5
			run = 0
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			run++
		case r >= utf8.RuneSelf && dense(r):
			flush()
			n++
		case r >= utf8.RuneSelf && unicode.IsLetter(r):
			run += size
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

// dense reports whether r belongs to a script written without spaces,
// whose characters tokenizers split about one a token.
func dense(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Thai, r)
}

// Per-message and per-image costs added to the text's tokens, after
// OpenAI's accounting for chat messages: a few tokens frame each message,
// and an image costs what a 512×512 tile at high detail costs plus the
// base (gpt-4o: 170 + 85).
const (
	messageTokens = 4
	imageTokens   = 255
)

// turnTokens counts what a turn costs.
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
		n += messageTokens + c.Count(call.name) + c.Count(call.arguments)
	}
	return n
}
