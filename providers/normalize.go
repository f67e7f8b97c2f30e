package providers

import (
	"encoding/json"
	"fmt"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// MissingResult is the content given to a tool call whose result is not
// in the context (a call cut off, or its result lost): every provider
// requires each call to be answered before the conversation goes on.
const MissingResult = "No result was recorded for this tool call."

// normalize turns a pipeline's messages into turns every format can be
// written from:
//
//   - system and developer messages stay as they are;
//   - a compare message becomes the messages of its active column (the
//     column whose first message is activeColumnId, else the one holding a
//     message whose metadata says activeColumn, else the first);
//   - a message of any other role that is not user, assistant or tool
//     becomes a user message with its content, since its words came from
//     outside the model; a group message (assistantGroup, supervisor)
//     becomes its children's assistant and tool turns (appendGroup), with
//     a warning when the spec left it unflattened at the top level; an
//     agentCouncil or tasks message, whose tool calls are then lost, with
//     a warning;
//   - every tool call is followed by its result: results are moved up to
//     follow their call, a call without one gets MissingResult, and a result
//     whose call is not in the context becomes a user message that says
//     which tool it came from;
//   - content parts other than text and images become text naming their
//     type, so that nothing is dropped without a trace; thinking parts are
//     kept apart, for the formats that send them back.
//
// in, when not nil, is the pipeline's input, read for what the pipeline
// dropped (see inputIndex).
func normalize(msgs []enginecore.Message, in *inputIndex) ([]turn, []string) {
	n := normalizer{}
	var turns []turn
	for i, m := range msgs {
		n.at = i
		turns = n.appendMessage(turns, m, 0)
	}
	return pairTools(turns, in), n.warnings
}

// A normalizer collects the warnings of one normalize.
type normalizer struct {
	at       int // the index of the message read
	warnings []string
}

// maxCompareDepth bounds compare messages nested in columns.
const maxCompareDepth = 8

// groupRoles are the roles of the messages the flatten processors turn
// into assistant and tool messages.
var groupRoles = map[string]string{
	"assistantGroup": "GroupMessageFlattenProcessor",
	"supervisor":     "SupervisorRoleRestoreProcessor",
	"agentCouncil":   "AgentCouncilFlattenProcessor",
	"tasks":          "TasksFlattenProcessor",
}

func (n *normalizer) appendMessage(turns []turn, m map[string]any, depth int) []turn {
	role, _ := m["role"].(string)
	switch role {
	case "system", "developer", "user":
		parts, _ := contentParts(m["content"])
		return append(turns, turn{role: role, parts: parts})
	case "assistant":
		parts, thinking := contentParts(m["content"])
		t := turn{role: role, parts: parts, thinking: thinking, calls: toolCalls(m["tool_calls"]), fields: readProviderFields(m)}
		if tools, _ := m["tools"].([]any); len(tools) > 0 && m["tool_calls"] == nil {
			// The reference's pipeline leaves the messages of a compare
			// message's columns in the reference's shape.
			if depth == 0 {
				n.warnf("messages[%d]: an assistant message's %d tool calls are in the reference's shape (tools), not tool_calls (the spec lacks ToolCallProcessor): they were written from tools, without the spec's processors", n.at, len(tools))
			}
			var results []turn
			t.calls, results = referenceCalls(tools)
			return append(append(turns, t), results...)
		}
		return append(turns, t)
	case "tool":
		id, _ := m["tool_call_id"].(string)
		name, _ := m["name"].(string)
		parts, _ := contentParts(m["content"])
		return append(turns, turn{role: role, parts: parts, callID: id, name: name})
	case "compare":
		if depth >= maxCompareDepth {
			parts, _ := contentParts(m["content"])
			return append(turns, turn{role: "assistant", parts: parts})
		}
		for _, c := range activeColumn(m) {
			if cm, ok := c.(map[string]any); ok {
				turns = n.appendMessage(turns, cm, depth+1)
			}
		}
		return turns
	}
	if role == "assistantGroup" || role == "supervisor" {
		if depth == 0 {
			n.warnf("messages[%d]: a %s message reached the format unflattened (the spec lacks %s): its %d tool calls were written from its children, without the spec's processors", n.at, role, groupRoles[role], groupCalls(m))
		}
		return appendGroup(turns, m)
	}
	if p, ok := groupRoles[role]; ok {
		n.warnf("messages[%d]: a %s message reached the format unflattened: its content became user text and its %d tool calls are lost (the spec lacks %s)", n.at, role, groupCalls(m), p)
	}
	parts, _ := contentParts(m["content"])
	return append(turns, turn{role: "user", parts: parts})
}

// appendGroup writes a group message (assistantGroup, supervisor) as
// GroupMessageFlattenProcessor does: each child an assistant turn with
// its tools as calls, followed by the results the tools carry. The
// reference's pipeline leaves the groups inside a compare message's
// columns as they are; without this their tool history would become
// user text.
func appendGroup(turns []turn, m map[string]any) []turn {
	for _, c := range asList(m["children"]) {
		child, _ := c.(map[string]any)
		if child == nil {
			continue
		}
		parts, thinking := contentParts(child["content"])
		t := turn{role: "assistant", parts: parts, thinking: thinking, fields: readProviderFields(child)}
		var results []turn
		t.calls, results = referenceCalls(asList(child["tools"]))
		turns = append(turns, t)
		turns = append(turns, results...)
	}
	return turns
}

// referenceCalls reads tool calls in the reference's shape (a message's
// tools: {id, identifier, apiName, type, arguments, result?}) as
// ToolCallProcessor names them, with the results they carry.
func referenceCalls(tools []any) ([]toolCall, []turn) {
	var names processors.ToolNameResolver
	var calls []toolCall
	var results []turn
	for i, x := range tools {
		tool, _ := x.(map[string]any)
		id, _ := tool["id"].(string)
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		identifier, _ := tool["identifier"].(string)
		api, _ := tool["apiName"].(string)
		typ, _ := tool["type"].(string)
		args, _ := tool["arguments"].(string)
		sig, _ := tool[FieldThoughtSignature].(string)
		calls = append(calls, toolCall{id: id, orig: id, name: names.Generate(identifier, api, typ), arguments: args, signature: sig})
		if r, ok := tool["result"].(map[string]any); ok {
			rp, _ := contentParts(r["content"])
			results = append(results, turn{role: "tool", parts: rp, callID: id})
		}
	}
	return calls, results
}
func (n *normalizer) warnf(format string, a ...any) {
	n.warnings = append(n.warnings, fmt.Sprintf(format, a...))
}

// groupCalls counts the tool calls of a group message's children.
func groupCalls(m map[string]any) int {
	count := 0
	for _, c := range asList(m["children"]) {
		cm, _ := c.(map[string]any)
		count += len(asList(cm["tools"]))
	}
	return count + len(asList(m["tools"]))
}

func asList(v any) []any { l, _ := v.([]any); return l }

// readProviderFields reads an assistant message's
// reasoning.providerFields.
func readProviderFields(m map[string]any) providerFields {
	r, _ := m[FieldReasoning].(map[string]any)
	pf, _ := r[FieldProviderFields].(map[string]any)
	if pf == nil {
		return providerFields{}
	}
	objects := func(v any) []map[string]any {
		var out []map[string]any
		for _, x := range asList(v) {
			if o, ok := x.(map[string]any); ok {
				out = append(out, o)
			}
		}
		return out
	}
	f := providerFields{thinking: objects(pf[FieldThinking]), reasoningItems: objects(pf[FieldReasoningItems])}
	f.provider, _ = pf[FieldProvider].(string)
	f.model, _ = pf[FieldModel].(string)
	f.thoughtSignature, _ = pf[FieldThoughtSignature].(string)
	return f
}

// activeColumn returns the messages of a compare message's active column.
func activeColumn(m map[string]any) []any {
	cols, _ := m["columns"].([]any)
	if len(cols) == 0 {
		// A compare without columns says what it has in its content.
		return []any{map[string]any{"role": "assistant", "content": m["content"]}}
	}
	first := func(col any) map[string]any {
		c, _ := col.([]any)
		if len(c) == 0 {
			return nil
		}
		f, _ := c[0].(map[string]any)
		return f
	}
	if id, _ := m["activeColumnId"].(string); id != "" {
		for _, col := range cols {
			if f := first(col); f != nil && f["id"] == id {
				c, _ := col.([]any)
				return c
			}
		}
	}
	for _, col := range cols {
		c, _ := col.([]any)
		for _, x := range c {
			xm, _ := x.(map[string]any)
			md, _ := xm["metadata"].(map[string]any)
			if active, _ := md["activeColumn"].(bool); active {
				return c
			}
		}
	}
	c, _ := cols[0].([]any)
	return c
}

// contentParts reads a message's content: a string, or an array of
// OpenAI-style parts; thinking and redacted_thinking parts (a signed
// reasoning, as MessageContentProcessor writes it) are returned apart.
func contentParts(v any) (parts []part, thinking []map[string]any) {
	switch c := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []part{{text: c}}, nil
	case []any:
		out := make([]part, 0, len(c))
		for _, p := range c {
			pm, ok := p.(map[string]any)
			if !ok {
				out = append(out, part{text: jsonText(p)})
				continue
			}
			typ, _ := pm["type"].(string)
			switch typ {
			case "thinking", "redacted_thinking":
				thinking = append(thinking, pm)
			case "text", "input_text":
				s, _ := pm["text"].(string)
				out = append(out, part{text: s})
			case "image_url":
				var url string
				switch iu := pm["image_url"].(type) {
				case string:
					url = iu
				case map[string]any:
					url, _ = iu["url"].(string)
				}
				if url == "" {
					out = append(out, part{text: "[image without a URL]"})
					continue
				}
				out = append(out, part{image: url})
			default:
				out = append(out, part{text: fmt.Sprintf("[%s content: %s]", typ, jsonText(pm))})
			}
		}
		return out, thinking
	}
	return []part{{text: jsonText(v)}}, nil
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// toolCalls reads an assistant message's OpenAI-style tool_calls.
func toolCalls(v any) []toolCall {
	list, _ := v.([]any)
	out := make([]toolCall, 0, len(list))
	for i, c := range list {
		cm, _ := c.(map[string]any)
		fn, _ := cm["function"].(map[string]any)
		id, _ := cm["id"].(string)
		name, _ := fn["name"].(string)
		var args string
		switch a := fn["arguments"].(type) {
		case string:
			args = a
		case nil:
		default:
			args = jsonText(a)
		}
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		if name == "" {
			name = "unknown_tool"
		}
		sig, _ := cm[FieldThoughtSignature].(string)
		out = append(out, toolCall{id: id, orig: id, name: name, arguments: args, signature: sig})
	}
	return out
}

// pairTools puts each tool call's result right after the assistant turn
// that made it, answers calls without a result, and turns results without
// a call into user turns. Each call gets the id the request carries:
// sanitised first (callID), then made unique, so that two distinct calls
// never share one; its result follows it. The k-th call of an id is
// answered by the k-th result of that id after it, so a conversation that
// reuses ids across turns pairs each call with its own result; where the
// pipeline answered a call with its synthetic failure although the input
// holds the call's result (ToolMessageReorder keeps only the first result
// of an id), in supplies the real one.
func pairTools(ts []turn, in *inputIndex) []turn {
	results := map[string][]int{} // call id → indexes of its results
	calls := map[string]int{}     // call id → index of its first call
	for i, t := range ts {
		if t.role == "tool" && t.callID != "" {
			results[t.callID] = append(results[t.callID], i)
		}
		for _, c := range t.calls {
			if _, seen := calls[c.orig]; !seen {
				calls[c.orig] = i
			}
		}
	}
	seen := map[string]bool{} // the ids given so far
	nth := map[string]int{}   // call id → calls of it so far
	total := map[string]int{} // call id → calls of it in all
	for _, t := range ts {
		for _, c := range t.calls {
			total[c.orig]++
		}
	}
	used := make([]bool, len(ts))
	out := make([]turn, 0, len(ts))
	for i, t := range ts {
		switch {
		case t.role == "assistant" && len(t.calls) > 0:
			t.calls = requestIDs(t.calls, seen)
			for k := range t.calls {
				c := &t.calls[k]
				nth[c.orig]++
				if c.signature == "" {
					c.signature = in.signature(c.orig, nth[c.orig], total[c.orig])
				}
			}
			out = append(out, t)
			for _, c := range t.calls {
				r, ok := turn{}, false
				if j, found := resultFor(results[c.orig], used, i); found {
					used[j] = true
					r, ok = ts[j], true
				}
				if !ok || r.text() == syntheticFailure {
					if real, found := in.result(c.orig, nth[c.orig], total[c.orig]); found {
						r, ok = turn{role: "tool", parts: real}, true
					}
				}
				if !ok {
					r = turn{role: "tool", parts: []part{{text: MissingResult}}}
				}
				r.callID, r.name = c.id, c.name
				out = append(out, r)
			}
		case t.role == "tool":
			if used[i] {
				continue
			}
			if j, ok := calls[t.callID]; ok && j > i && results[t.callID][0] == i {
				// Its call comes later: the result moves there.
				continue
			}
			name := t.name
			if name == "" {
				name = "a tool"
			}
			text := fmt.Sprintf("[result of %s, whose call is not in this context]", name)
			if body := t.text(); body != "" {
				text += "\n" + body
			}
			out = append(out, turn{role: "user", parts: []part{{text: text}}})
		default:
			out = append(out, t)
		}
	}
	return out
}

// syntheticFailure is the content ToolMessageReorder gives a call it
// found no result for (processors.toolFailureContent).
const syntheticFailure = `{"error":"Tool call failed","success":false,"synthetic":true}`

// resultFor picks the result of a call made at index at: the first unused
// one after it (ids repeat when a conversation reuses them), else the
// first unused one before it.
func resultFor(indexes []int, used []bool, at int) (int, bool) {
	for _, j := range indexes {
		if j > at && !used[j] {
			return j, true
		}
	}
	for _, j := range indexes {
		if !used[j] {
			return j, true
		}
	}
	return 0, false
}

// dupSuffix marks a call id made unique: providers refuse two calls with
// one id in one request.
const dupSuffix = "__dup"

// requestIDs gives each call the id the request carries: its id
// sanitised (callID), then made unique among the ids in seen, which it
// extends.
func requestIDs(calls []toolCall, seen map[string]bool) []toolCall {
	out := make([]toolCall, len(calls))
	for i, c := range calls {
		id := callID(c.orig)
		if seen[id] {
			for n := 2; ; n++ {
				if next := fmt.Sprintf("%s%s%d", id, dupSuffix, n); !seen[next] {
					id = next
					break
				}
			}
		}
		seen[id] = true
		c.id = id
		out[i] = c
	}
	return out
}
