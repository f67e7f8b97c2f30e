// Package bpe counts tokens exactly as OpenAI's models do, with the
// byte-pair encodings (o200k_base, cl100k_base) compiled into the program
// by github.com/tiktoken-go/tokenizer, so that counting needs no download.
// A program that does not import it does not carry the vocabularies.
package bpe

import (
	"fmt"

	"github.com/tiktoken-go/tokenizer"
)

// Encodings lists the encodings New accepts.
func Encodings() []string { return []string{"o200k_base", "cl100k_base"} }

// Counter counts tokens with one encoding; it is safe for concurrent use.
type Counter struct {
	codec tokenizer.Codec
}

// New returns the Counter of an encoding: o200k_base (GPT-4o, GPT-4.1,
// o-series) or cl100k_base (GPT-4, GPT-3.5).
func New(encoding string) (*Counter, error) {
	var enc tokenizer.Encoding
	switch encoding {
	case "o200k_base":
		enc = tokenizer.O200kBase
	case "cl100k_base":
		enc = tokenizer.Cl100kBase
	default:
		return nil, fmt.Errorf("bpe: unknown encoding %q: want one of %v", encoding, Encodings())
	}
	c, err := tokenizer.Get(enc)
	if err != nil {
		return nil, fmt.Errorf("bpe: %w", err)
	}
	return &Counter{codec: c}, nil
}

// Count returns the tokens of text.
func (c *Counter) Count(text string) int {
	n, err := c.codec.Count(text)
	if err != nil {
		// The codec fails only on text it cannot split; count it by the
		// estimate's rule of thumb rather than as free.
		return (len(text) + 3) / 4
	}
	return n
}
