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
//   - a context that ends with the model's turn keeps it where the profile
//     keeps prefills, and else ends with a user content ContinueReply
//     (Gemini 3 refuses a final model turn);
//   - a tool call is a functionCall part (args an object, with the call's
//     id), its result a functionResponse part of a user content with the
//     text under "output", as the API documents; with separate function
//     turns (the default) a call's responses have a content of their own,
//     and user text after them follows a model content ToolResultsRead;
//   - a call's kept thoughtSignature is sent back on its part, and the
//     reply's kept text signature (reasoning.providerFields
//     .thoughtSignature) on the content's first part, where the profile
//     sends signatures back; in the current turn (from the last user
//     text on), the first functionCall of each model content without one
//     carries SkipThoughtSignature, unless the profile says keep or drop
//     (Gemini 3 answers 400 to a call of the current turn without it);
//   - empty text parts are left out, and a content left with no part with
//     them;
//   - images are inlineData for a data: URL, fileData (with the media type
//     its extension gives, when it does) for any other; in model contents
//     a note "[image: URL]" where the profile says so.
func geminiBody(turns []turn, r rules) map[string]any {
	var system []string
	var contents []map[string]any
	// responses marks the contents that hold only function responses.
	responses := map[int]bool{}
	add := func(role string, parts []any, functionResponses bool) {
		if len(parts) == 0 {
			return
		}
		if n := len(contents); n > 0 && contents[n-1]["role"] == role {
			if !r.separateFunctions || responses[n-1] == functionResponses {
				contents[n-1]["parts"] = append(contents[n-1]["parts"].([]any), parts...)
				if !functionResponses {
					delete(responses, n-1)
				}
				return
			}
			if role == "user" {
				// Contents alternate: the responses and the user's text
				// are parted by the model's acknowledgement.
				contents = append(contents, map[string]any{"role": "model", "parts": []any{map[string]any{"text": ToolResultsRead}}})
			}
		}
		if functionResponses {
			responses[len(contents)] = true
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
			add("user", geminiParts(t, true), false)
		case "assistant":
			parts := geminiParts(t, r.assistantImages)
			if r.signatures && t.fields.provider == ProviderGemini && t.fields.thoughtSignature != "" && len(parts) > 0 {
				parts[0].(map[string]any)[FieldThoughtSignature] = t.fields.thoughtSignature
			}
			for _, c := range t.calls {
				p := map[string]any{"functionCall": map[string]any{
					"id": c.id, "name": toolName(c.name), "args": argumentsObject(c.arguments),
				}}
				if r.signatures && c.signature != "" {
					p[FieldThoughtSignature] = c.signature
				}
				parts = append(parts, p)
			}
			add("model", parts, false)
		case "tool":
			add("user", []any{map[string]any{"functionResponse": map[string]any{
				"id": t.callID, "name": toolName(t.name), "response": map[string]any{"output": textNoting(t)},
			}}}, true)
		}
	}
	if len(contents) == 0 || contents[0]["role"] != "user" {
		contents = append([]map[string]any{{"role": "user", "parts": []any{map[string]any{"text": ContinuePrompt}}}}, contents...)
	}
	if n := len(contents); !r.prefill && contents[n-1]["role"] == "model" {
		contents = append(contents, map[string]any{"role": "user", "parts": []any{map[string]any{"text": ContinueReply}}})
	}
	if r.fallback {
		signCurrentTurn(contents)
	}
	body := map[string]any{"contents": contents}
	if len(system) > 0 {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": strings.Join(system, "\n\n")}}}
	}
	return body
}

// signCurrentTurn gives the first functionCall part of each model content
// of the current turn (the contents after the last user content with
// other parts than function responses) SkipThoughtSignature when it has no
// signature: what Gemini documents for calls whose signature was not kept.
func signCurrentTurn(contents []map[string]any) {
	start := 0
	for i, c := range contents {
		if c["role"] != "user" {
			continue
		}
		for _, p := range c["parts"].([]any) {
			if _, ok := p.(map[string]any)["functionResponse"]; !ok {
				start = i
				break
			}
		}
	}
	for _, c := range contents[start:] {
		if c["role"] != "model" {
			continue
		}
		for _, p := range c["parts"].([]any) {
			pm := p.(map[string]any)
			if _, ok := pm["functionCall"]; !ok {
				continue
			}
			if _, signed := pm[FieldThoughtSignature]; !signed {
				pm[FieldThoughtSignature] = SkipThoughtSignature
			}
			break
		}
	}
}

// geminiParts returns a turn's text and image parts; images are notes
// unless images is set.
func geminiParts(t turn, images bool) []any {
	parts := make([]any, 0, len(t.parts))
	for _, p := range t.parts {
		switch {
		case p.image != "" && !images:
			parts = append(parts, map[string]any{"text": "[image: " + imageLabel(p.image) + "]"})
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
