package providers

// responsesBody is the OpenAI Responses request body: the turns as input
// items. Messages are {role, content} items (content a string, or
// input_text and input_image parts for a user's images); an assistant's
// tool calls are function_call items after its text, and their results
// function_call_output items. An assistant turn that only calls tools
// writes no message item. The reasoning items an OpenAI reply kept
// (reasoning.providerFields.reasoningItems) come first in its turn when
// the request is for the model that wrote them and the profile sends
// signatures back: a reasoning model continues from them, and another
// model cannot read them.
func responsesBody(turns []turn, r rules) map[string]any {
	input := make([]any, 0, len(turns))
	for _, t := range turns {
		switch t.role {
		case "system", "developer":
			input = append(input, map[string]any{"type": "message", "role": t.role, "content": textNoting(t)})
		case "user":
			input = append(input, map[string]any{"type": "message", "role": "user", "content": responsesUserContent(t)})
		case "assistant":
			if f := t.fields; r.signatures && f.provider == ProviderOpenAI && f.model != "" && family(f.model).id == r.model {
				for _, it := range f.reasoningItems {
					input = append(input, reasoningItem(it))
				}
			}
			if text := textNoting(t); text != "" || len(t.calls) == 0 {
				input = append(input, map[string]any{"type": "message", "role": "assistant", "content": text})
			}
			for _, c := range t.calls {
				input = append(input, map[string]any{
					"type": "function_call", "call_id": c.id, "name": toolName(c.name), "arguments": argumentsText(c.arguments),
				})
			}
		case "tool":
			input = append(input, map[string]any{"type": "function_call_output", "call_id": t.callID, "output": textNoting(t)})
		}
	}
	return map[string]any{"input": input}
}

func responsesUserContent(t turn) any {
	if !t.hasImages() {
		return t.text()
	}
	parts := make([]any, 0, len(t.parts))
	for _, p := range t.parts {
		if p.image != "" {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": p.image, "detail": "auto"})
		} else if p.text != "" {
			parts = append(parts, map[string]any{"type": "input_text", "text": p.text})
		}
	}
	return parts
}

// reasoningItem writes a kept reasoning item with the fields the API takes
// back.
func reasoningItem(it map[string]any) map[string]any {
	out := map[string]any{"type": "reasoning", "summary": []any{}}
	if s, ok := it["summary"].([]any); ok {
		out["summary"] = s
	}
	for _, k := range [...]string{"id", "encrypted_content"} {
		if v, ok := it[k].(string); ok && v != "" {
			out[k] = v
		}
	}
	return out
}
