package processors

import (
	"maps"
	"slices"
	"strconv"

	"github.com/convstream/convstream/enginecore"
)

// appendSystemContent adds content to the pipeline's system message: it is
// joined with a blank line to the first system message, or, when there is
// none, a new system message stamped by clock is put first. It returns the
// derived context; pc is not modified. Callers skip blank content.
func appendSystemContent(pc *enginecore.PipelineContext, processor, content string, clock Clock) *enginecore.PipelineContext {
	next := pc.Derive()
	idx := slices.IndexFunc(pc.Messages, func(m enginecore.Message) bool { return m["role"] == "system" })
	if idx >= 0 {
		existing := pc.Messages[idx]
		joined := content
		if cur, ok := existing["content"]; ok && truthy(cur) {
			joined = jsString(cur) + "\n\n" + content
		}
		msg := maps.Clone(existing)
		msg["content"] = joined
		next.Messages = replaceAt(pc.Messages, idx, msg)
		return next
	}

	now := clock.millis()
	msg := enginecore.Message{
		"content":   content,
		"createdAt": now,
		"id":        "system-" + processor + "-" + strconv.FormatInt(int64(now), 10),
		"role":      "system",
		"updatedAt": now,
	}
	next.Messages = insertAt(pc.Messages, 0, msg)
	return next
}

// replaceAt returns a copy of msgs with msgs[i] replaced by m.
func replaceAt(msgs []enginecore.Message, i int, m enginecore.Message) []enginecore.Message {
	out := slices.Clone(msgs)
	out[i] = m
	return out
}

// insertAt returns a copy of msgs with m inserted before position i.
func insertAt(msgs []enginecore.Message, i int, m enginecore.Message) []enginecore.Message {
	out := make([]enginecore.Message, 0, len(msgs)+1)
	out = append(out, msgs[:i]...)
	out = append(out, m)
	return append(out, msgs[i:]...)
}

// isBlank reports whether s is empty or only whitespace.
func isBlank(s string) bool { return trimJS(s) == "" }
