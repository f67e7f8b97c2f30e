package providers

import "strings"

// geminiBody is the Gemini generateContent request body (REST, camelCase
// fields):
//
//   - system and developer text is the systemInstruction;
//   - user turns are "user" contents and assistant turns "model" contents,
//     alternating from the user's: adjacent contents of one role are
//     merged, and ContinuePrompt opens a context that starts with the
//     model's;
//   - a tool call is a functionCall part (args an object, with the call's
//     id), its result a functionResponse part of a user content with the
//     text under "output", as the API documents;
//   - empty text parts are left out, and a content left with no part with
//     them;
//   - images are inlineData for a data: URL, fileData (with the media type
//     its extension gives, when it does) for any other.
func geminiBody(turns []turn) map[string]any {
	var system []string
	var contents []map[string]any
	add := func(role string, parts []any) {
		if len(parts) == 0 {
			return
		}
		if n := len(contents); n > 0 && contents[n-1]["role"] == role {
			contents[n-1]["parts"] = append(contents[n-1]["parts"].([]any), parts...)
			return
		}
		contents = append(contents, map[string]any{"role": role, "parts": parts})
	}
	for _, t := range turns {
		switch t.role {
		case "system", "developer":
			if s := textNoting(t); strings.TrimSpace(s) != "" {
				system = append(system, s)
			}
		case "user":
			add("user", geminiParts(t))
		case "assistant":
			parts := geminiParts(t)
			for _, c := range t.calls {
				parts = append(parts, map[string]any{"functionCall": map[string]any{
					"id": c.id, "name": toolName(c.name), "args": argumentsObject(c.arguments),
				}})
			}
			add("model", parts)
		case "tool":
			add("user", []any{map[string]any{"functionResponse": map[string]any{
				"id": t.callID, "name": toolName(t.name), "response": map[string]any{"output": textNoting(t)},
			}}})
		}
	}
	if len(contents) == 0 || contents[0]["role"] != "user" {
		contents = append([]map[string]any{{"role": "user", "parts": []any{map[string]any{"text": ContinuePrompt}}}}, contents...)
	}
	body := map[string]any{"contents": contents}
	if len(system) > 0 {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": strings.Join(system, "\n\n")}}}
	}
	return body
}

func geminiParts(t turn) []any {
	parts := make([]any, 0, len(t.parts))
	for _, p := range t.parts {
		switch {
		case p.image != "":
			if mt, data, ok := dataURL(p.image); ok {
				parts = append(parts, map[string]any{"inlineData": map[string]any{"mimeType": mt, "data": data}})
				continue
			}
			fd := map[string]any{"fileUri": p.image}
			if mt := mediaTypeOf(p.image); mt != "" {
				fd["mimeType"] = mt
			}
			parts = append(parts, map[string]any{"fileData": fd})
		case strings.TrimSpace(p.text) != "":
			parts = append(parts, map[string]any{"text": p.text})
		}
	}
	return parts
}
