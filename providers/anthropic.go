package providers

import "strings"

// DefaultMaxTokens is the max_tokens an Anthropic request carries unless
// WithMaxTokens says otherwise: the API requires the field.
const DefaultMaxTokens = 4096

// ContinuePrompt opens a conversation for the providers whose first turn
// must be the user's (Anthropic, Gemini) when the context starts with the
// model's words, e.g. after a truncation or an assistant's greeting.
const ContinuePrompt = "(The conversation so far follows.)"

// anthropicBody is the Anthropic Messages request body:
//
//   - every system and developer message's text, joined in order, is the
//     top-level system, one text block (the API has no system role among
//     messages);
//   - user and assistant turns alternate, starting with the user's:
//     adjacent turns of one role are merged, and ContinuePrompt opens a
//     context that starts with the assistant's;
//   - a context that ends with the assistant's turn keeps it as a
//     prefill, without trailing white space (the API refuses it), where
//     the profile keeps prefills, and else ends with a user turn
//     ContinueReply (Claude from 4.6 answers a prefill with 400);
//   - a tool call is a tool_use block (its arguments an object), and its
//     result a tool_result block at the start of the next user turn (its
//     text a text block, the form the SDK writes);
//   - an assistant turn's kept thinking blocks (reasoning.providerFields
//     .thinking from Anthropic, else the signed thinking part the pipeline
//     made of reasoning.signature) open its message, where the profile
//     sends signatures back: the API requires them back in a tool-use
//     loop with thinking on, and ignores those of earlier turns;
//   - empty text blocks are left out (the API refuses them), and a turn
//     left with no block with them;
//   - images are image blocks in user turns: a data: URL as base64, any
//     other as a URL; in assistant turns a note "[image: URL]" (Claude
//     takes image blocks only from the user) unless the profile keeps
//     them;
//   - "tools" declares each tool the history calls, with an open input
//     schema, since the API refuses tool blocks in a request without
//     tools. An orchestrator that passes its own tools replaces them.
func anthropicBody(turns []turn, r rules, maxTokens int) map[string]any {
	var system []string
	var msgs []map[string]any
	var tools []any
	declared := map[string]bool{}
	add := func(role string, blocks []any, toolResults bool) {
		if len(blocks) == 0 {
			return
		}
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == role {
			prev := msgs[n-1]["content"].([]any)
			if toolResults {
				// tool_result blocks go first in a user turn.
				msgs[n-1]["content"] = append(leadingResults(prev, blocks), trailingNonResults(prev)...)
				return
			}
			msgs[n-1]["content"] = append(prev, blocks...)
			return
		}
		msgs = append(msgs, map[string]any{"role": role, "content": blocks})
	}
	for _, t := range turns {
		switch t.role {
		case "system", "developer":
			if s := textNoting(t); strings.TrimSpace(s) != "" {
				system = append(system, s)
			}
		case "user":
			add("user", anthropicParts(t, true), false)
		case "assistant":
			blocks := anthropicParts(t, r.assistantImages)
			if n := len(msgs); r.signatures && (n == 0 || msgs[n-1]["role"] != "assistant") {
				blocks = append(thinkingBlocks(t), blocks...)
			}
			for _, c := range t.calls {
				name := toolName(c.name)
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.id, "name": name, "input": argumentsObject(c.arguments)})
				if !declared[name] {
					declared[name] = true
					tools = append(tools, map[string]any{
						"name": name, "description": "A tool called earlier in this conversation.",
						"input_schema": map[string]any{"type": "object"},
					})
				}
			}
			add("assistant", blocks, false)
		case "tool":
			result := map[string]any{"type": "tool_result", "tool_use_id": t.callID}
			if s := textNoting(t); strings.TrimSpace(s) != "" {
				result["content"] = []any{map[string]any{"type": "text", "text": s}}
			}
			add("user", []any{result}, true)
		}
	}
	if r.prefill {
		msgs = trimFinalAssistant(msgs)
	} else if n := len(msgs); n > 0 && msgs[n-1]["role"] == "assistant" {
		msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": ContinueReply}}})
	}
	if len(msgs) == 0 || msgs[0]["role"] != "user" {
		msgs = append([]map[string]any{{"role": "user", "content": []any{map[string]any{"type": "text", "text": ContinuePrompt}}}}, msgs...)
	}
	body := map[string]any{"messages": msgs, "max_tokens": maxTokens}
	if len(system) > 0 {
		body["system"] = []any{map[string]any{"type": "text", "text": strings.Join(system, "\n\n")}}
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	return body
}

// anthropicParts returns a turn's text and image blocks; images are
// notes unless images is set.
func anthropicParts(t turn, images bool) []any {
	blocks := make([]any, 0, len(t.parts))
	for _, p := range t.parts {
		switch {
		case p.image != "" && !images:
			blocks = append(blocks, map[string]any{"type": "text", "text": "[image: " + imageLabel(p.image) + "]"})
		case p.image != "":
			if mt, data, ok := dataURL(p.image); ok {
				blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mt, "data": data}})
			} else {
				blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": p.image}})
			}
		case strings.TrimSpace(p.text) != "":
			blocks = append(blocks, map[string]any{"type": "text", "text": p.text})
		}
	}
	return blocks
}

func isResult(b any) bool {
	m, _ := b.(map[string]any)
	return m["type"] == "tool_result"
}

// leadingResults returns prev's tool_result blocks followed by more.
func leadingResults(prev, more []any) []any {
	out := make([]any, 0, len(prev)+len(more))
	for _, b := range prev {
		if isResult(b) {
			out = append(out, b)
		}
	}
	return append(out, more...)
}

func trailingNonResults(prev []any) []any {
	var out []any
	for _, b := range prev {
		if !isResult(b) {
			out = append(out, b)
		}
	}
	return out
}

// trimFinalAssistant trims the trailing white space of a final assistant
// turn (a prefill), which the API refuses, and drops blocks and the turn
// that this leaves empty.
func trimFinalAssistant(msgs []map[string]any) []map[string]any {
	n := len(msgs)
	if n == 0 || msgs[n-1]["role"] != "assistant" {
		return msgs
	}
	blocks := msgs[n-1]["content"].([]any)
	for len(blocks) > 0 {
		b, _ := blocks[len(blocks)-1].(map[string]any)
		if b["type"] != "text" {
			break
		}
		text := strings.TrimRight(b["text"].(string), " \t\r\n")
		if text != "" {
			blocks[len(blocks)-1] = map[string]any{"type": "text", "text": text}
			break
		}
		blocks = blocks[:len(blocks)-1]
	}
	if len(blocks) == 0 {
		return msgs[:n-1]
	}
	msgs[n-1]["content"] = blocks
	return msgs
}

// thinkingBlocks returns the thinking blocks an assistant turn sends back
// to Anthropic: those Anthropic's reply kept, else its signed thinking
// parts; a block without its signature or data is left out (the API
// refuses it).
func thinkingBlocks(t turn) []any {
	kept := t.thinking
	if t.fields.provider == ProviderAnthropic && len(t.fields.thinking) > 0 {
		kept = t.fields.thinking
	} else if t.fields.provider != "" && t.fields.provider != ProviderAnthropic {
		return nil
	}
	var out []any
	for _, b := range kept {
		switch b["type"] {
		case "thinking":
			sig, _ := b["signature"].(string)
			text, _ := b["thinking"].(string)
			if sig != "" {
				out = append(out, map[string]any{"type": "thinking", "thinking": text, "signature": sig})
			}
		case "redacted_thinking":
			if data, _ := b["data"].(string); data != "" {
				out = append(out, map[string]any{"type": "redacted_thinking", "data": data})
			}
		}
	}
	return out
}
