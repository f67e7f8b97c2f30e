package processors

import (
	"maps"
	"slices"
	"strconv"

	"github.com/convstream/convstream/enginecore"
)

// systemInjectionMarker flags, in a message's meta, the user message that
// collects context injected ahead of the first user message.
const systemInjectionMarker = "systemInjection"

func isSystemInjection(m enginecore.Message) bool {
	return dig(m, "meta", systemInjectionMarker) == true
}

// injectBeforeFirstUser adds content to the injection message that precedes
// the first user message, creating it when absent. Several providers share
// that one message, each appending a paragraph. When there is no user
// message nothing is injected. pc is not modified.
func injectBeforeFirstUser(pc *enginecore.PipelineContext, content string, clock Clock) *enginecore.PipelineContext {
	next := pc.Derive()
	if idx := slices.IndexFunc(pc.Messages, isSystemInjection); idx >= 0 {
		if updated, ok := appendToMessage(pc.Messages[idx], content, clock); ok {
			next.Messages = replaceAt(pc.Messages, idx, updated)
		}
		return next
	}

	first := slices.IndexFunc(pc.Messages, func(m enginecore.Message) bool { return m["role"] == "user" })
	if first < 0 {
		return next
	}
	now := clock.millis()
	msg := enginecore.Message{
		"content":   content,
		"createdAt": now,
		"id":        "system-injection-" + strconv.FormatInt(int64(now), 10),
		"meta":      map[string]any{systemInjectionMarker: true},
		"role":      "user",
		"updatedAt": now,
	}
	next.Messages = insertAt(pc.Messages, first, msg)
	return next
}

// appendToMessage appends a paragraph to a message's text: to string
// content directly, to the last text part of multimodal content (or as a
// new text part when there is none). Other content is left alone (ok is
// false).
func appendToMessage(m enginecore.Message, add string, clock Clock) (enginecore.Message, bool) {
	switch content := m["content"].(type) {
	case string:
		out := maps.Clone(m)
		out["content"] = content + "\n\n" + add
		out["updatedAt"] = clock.millis()
		return out, true
	case []any:
		parts := slices.Clone(content)
		last := -1
		for i, p := range parts {
			if dig(p, "type") == "text" {
				last = i
			}
		}
		if last >= 0 {
			part := maps.Clone(obj(parts[last]))
			part["text"] = textOf(part, "text") + "\n\n" + add
			parts[last] = part
		} else {
			parts = append(parts, map[string]any{"text": add, "type": "text"})
		}
		out := maps.Clone(m)
		out["content"] = parts
		out["updatedAt"] = clock.millis()
		return out, true
	}
	return m, false
}
