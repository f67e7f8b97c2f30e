package providers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/convstream/convstream/enginecore"
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
//     outside the model;
//   - every tool call is followed by its result: results are moved up to
//     follow their call, a call without one gets MissingResult, and a result
//     whose call is not in the context becomes a user message that says
//     which tool it came from;
//   - content parts other than text and images become text naming their
//     type, so that nothing is dropped without a trace.
func normalize(msgs []enginecore.Message) []turn {
	var turns []turn
	for _, m := range msgs {
		turns = appendMessage(turns, m, 0)
	}
	return pairTools(turns)
}

// maxCompareDepth bounds compare messages nested in columns.
const maxCompareDepth = 8

func appendMessage(turns []turn, m map[string]any, depth int) []turn {
	role, _ := m["role"].(string)
	switch role {
	case "system", "developer", "user":
		return append(turns, turn{role: role, parts: contentParts(m["content"])})
	case "assistant":
		return append(turns, turn{role: role, parts: contentParts(m["content"]), calls: toolCalls(m["tool_calls"])})
	case "tool":
		id, _ := m["tool_call_id"].(string)
		name, _ := m["name"].(string)
		return append(turns, turn{role: role, parts: contentParts(m["content"]), callID: id, name: name})
	case "compare":
		if depth >= maxCompareDepth {
			return append(turns, turn{role: "assistant", parts: contentParts(m["content"])})
		}
		for _, c := range activeColumn(m) {
			if cm, ok := c.(map[string]any); ok {
				turns = appendMessage(turns, cm, depth+1)
			}
		}
		return turns
	}
	return append(turns, turn{role: "user", parts: contentParts(m["content"])})
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
// OpenAI-style parts.
func contentParts(v any) []part {
	switch c := v.(type) {
	case nil:
		return nil
	case string:
		return []part{{text: c}}
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
		return out
	}
	return []part{{text: jsonText(v)}}
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
		out = append(out, toolCall{id: id, name: name, arguments: args})
	}
	return out
}

// pairTools puts each tool call's result right after the assistant turn
// that made it, answers calls without a result, and turns results without
// a call into user turns.
func pairTools(in []turn) []turn {
	results := map[string][]int{} // call id → indexes of its results
	calls := map[string]int{}     // call id → index of its first call
	for i, t := range in {
		if t.role == "tool" && t.callID != "" {
			results[t.callID] = append(results[t.callID], i)
		}
		for _, c := range t.calls {
			if _, seen := calls[c.id]; !seen {
				calls[c.id] = i
			}
		}
	}
	called := map[string]bool{}
	used := make([]bool, len(in))
	out := make([]turn, 0, len(in))
	for i, t := range in {
		switch {
		case t.role == "assistant" && len(t.calls) > 0:
			t.calls = uniqueCallIDs(t.calls, called)
			out = append(out, t)
			for _, c := range t.calls {
				if j, ok := resultFor(results[c.original()], used, i); ok {
					used[j] = true
					r := in[j]
					r.callID, r.name = c.id, c.name
					out = append(out, r)
					continue
				}
				out = append(out, turn{role: "tool", callID: c.id, name: c.name, parts: []part{{text: MissingResult}}})
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

// original returns the id a call had in the pipeline's output.
func (c toolCall) original() string {
	if i := strings.Index(c.id, dupSuffix); i >= 0 {
		return c.id[:i]
	}
	return c.id
}

// dupSuffix marks a call id made unique: providers refuse two calls with
// one id in one request.
const dupSuffix = "__dup"

func uniqueCallIDs(calls []toolCall, seen map[string]bool) []toolCall {
	var out []toolCall
	for i, c := range calls {
		if !seen[c.id] {
			seen[c.id] = true
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]toolCall, 0, len(calls)), calls[:i]...)
		}
		for n := 2; ; n++ {
			id := fmt.Sprintf("%s%s%d", c.id, dupSuffix, n)
			if !seen[id] {
				seen[id] = true
				c.id = id
				break
			}
		}
		out = append(out, c)
	}
	if out == nil {
		return calls
	}
	return out
}
