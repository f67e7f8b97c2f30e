package providers

import (
	"fmt"
	"slices"
)

// Format names the shape of a request body.
type Format string

// The formats Build writes.
const (
	// FormatOpenAIChat is an OpenAI Chat Completions request: {"messages"}.
	FormatOpenAIChat Format = "openai.chat"
	// FormatOpenAIResponses is an OpenAI Responses request: {"input"}.
	FormatOpenAIResponses Format = "openai.responses"
	// FormatAnthropic is an Anthropic Messages request:
	// {"system","messages","max_tokens"}, with "tools" when the
	// history holds tool calls (the API refuses tool blocks otherwise).
	FormatAnthropic Format = "anthropic.messages"
	// FormatGemini is a Gemini generateContent request:
	// {"systemInstruction","contents"}.
	FormatGemini Format = "gemini"
	// FormatRaw is the pipeline's output unchanged.
	FormatRaw Format = "raw"
)

// DefaultFormat is the format of a request that names none.
const DefaultFormat = FormatOpenAIChat

// Formats lists every format, the default first.
func Formats() []Format {
	return []Format{FormatOpenAIChat, FormatOpenAIResponses, FormatAnthropic, FormatGemini, FormatRaw}
}

// ParseFormat returns the format named s; "" is DefaultFormat.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return DefaultFormat, nil
	}
	if f := Format(s); slices.Contains(Formats(), f) {
		return f, nil
	}
	return "", fmt.Errorf("%w %q: want one of %v", ErrUnknownFormat, s, Formats())
}
