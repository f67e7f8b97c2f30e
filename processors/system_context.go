package processors

import (
	"maps"
	"slices"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// appendSystemContext appends a <contextType> block to a user message
// inside the SYSTEM CONTEXT wrapper that tells the model the text is not
// the user's: into the wrapper already there, or in a new one after the
// text. Multimodal content gets it in its last text part, or in a new
// text part when it has none. Content of any other shape is returned
// unchanged.
func appendSystemContext(m enginecore.Message, content, contextType string) enginecore.Message {
	switch c := m["content"].(type) {
	case string:
		out := maps.Clone(m)
		out["content"] = withSystemContext(c, content, contextType)
		return out
	case []any:
		parts := slices.Clone(c)
		last := -1
		for i, p := range slices.Backward(parts) {
			if dig(p, "type") == "text" {
				last = i
				break
			}
		}
		if last < 0 {
			parts = append(parts, map[string]any{"text": wrapSystemContext(content, contextType), "type": "text"})
		} else {
			part := maps.Clone(obj(parts[last]))
			part["text"] = withSystemContext(str(part["text"]), content, contextType)
			parts[last] = part
		}
		out := maps.Clone(m)
		out["content"] = parts
		return out
	}
	return m
}

// withSystemContext adds the block to text.
func withSystemContext(text, content, contextType string) string {
	block := "<" + contextType + ">\n" + content + "\n</" + contextType + ">"
	if strings.Contains(text, systemContextStart) && strings.Contains(text, systemContextEnd) {
		end := strings.LastIndex(text, systemContextEnd)
		return text[:end] + block + "\n" + text[end:]
	}
	return text + "\n\n" + wrapSystemContext(content, contextType)
}

func wrapSystemContext(content, contextType string) string {
	return systemContextStart + "\n" + contextInstruction + "\n<" + contextType + ">\n" + content + "\n</" + contextType + ">\n" + systemContextEnd
}

// escapeXMLAttr escapes & " < > for an XML attribute value.
var escapeXMLAttr = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace
