package providers

import (
	"encoding/json"
	"strings"
)

// toolName returns name as every provider accepts a function name:
// letters, digits, _ and -, at most 64 characters (OpenAI's rule, the
// strictest). Other characters become _.
func toolName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "unknown_tool"
	}
	return string(b)
}

// callID returns id as Anthropic accepts a tool_use id (letters, digits,
// _ and -); the mapping is the same for a call and its result.
func callID(id string) string {
	if id == "" {
		return "call"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
}

// argumentsText returns a call's arguments as the JSON text OpenAI
// expects: "{}" when the model wrote none.
func argumentsText(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// argumentsObject returns a call's arguments as the JSON object Anthropic
// and Gemini expect. Arguments that are not a JSON object are kept whole
// under "arguments", so that the model still sees what it wrote.
func argumentsObject(args string) map[string]any {
	if strings.TrimSpace(args) == "" {
		return map[string]any{}
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err == nil && obj != nil {
		return obj
	}
	return map[string]any{"arguments": args}
}
