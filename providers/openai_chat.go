package providers

// chatMessages writes turns as OpenAI Chat Completions messages:
//
//   - system and developer messages have text content (images are not
//     allowed there and become a note);
//   - user content is a string, or text and image_url parts when it holds
//     images;
//   - an assistant's content is its text, left out when it only calls
//     tools;
//   - tool messages carry tool_call_id and their text.
func chatMessages(turns []turn) []map[string]any {
	out := make([]map[string]any, 0, len(turns))
	for _, t := range turns {
		switch t.role {
		case "system", "developer":
			out = append(out, map[string]any{"role": t.role, "content": textNoting(t)})
		case "user":
			out = append(out, map[string]any{"role": "user", "content": chatUserContent(t)})
		case "assistant":
			m := map[string]any{"role": "assistant"}
			text := textNoting(t)
			if text != "" || len(t.calls) == 0 {
				m["content"] = text
			}
			if len(t.calls) > 0 {
				calls := make([]any, len(t.calls))
				for i, c := range t.calls {
					calls[i] = map[string]any{
						"id": c.id, "type": "function",
						"function": map[string]any{"name": toolName(c.name), "arguments": argumentsText(c.arguments)},
					}
				}
				m["tool_calls"] = calls
			}
			out = append(out, m)
		case "tool":
			out = append(out, map[string]any{"role": "tool", "tool_call_id": t.callID, "content": textNoting(t)})
		}
	}
	return out
}

func chatUserContent(t turn) any {
	if !t.hasImages() {
		return t.text()
	}
	parts := make([]any, 0, len(t.parts))
	for _, p := range t.parts {
		if p.image != "" {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": p.image}})
		} else if p.text != "" {
			parts = append(parts, map[string]any{"type": "text", "text": p.text})
		}
	}
	return parts
}

// textNoting returns the turn's text, with a note for each image where a
// role cannot carry images.
func textNoting(t turn) string {
	s := t.text()
	for _, p := range t.parts {
		if p.image != "" {
			if s != "" {
				s += "\n\n"
			}
			s += "[image: " + imageLabel(p.image) + "]"
		}
	}
	return s
}

// imageLabel names an image for a note: its URL, or the media type of a
// data: URL (whose bytes would only bloat the text).
func imageLabel(url string) string {
	if mt, _, ok := dataURL(url); ok {
		return "inline " + mt
	}
	return url
}
