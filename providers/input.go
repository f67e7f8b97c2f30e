package providers

import "github.com/convstream/convstream/enginecore"

// WithInput gives Build the messages the pipeline was run on (the
// conversation's flat list), so that a request carries what the
// reference's pipeline loses on the way and a model needs:
//
//   - the result of a call whose id an earlier call already used, which
//     ToolMessageReorder answers with its synthetic failure (it keeps one
//     result an id): the k-th call of an id is answered by the k-th result
//     of that id;
//   - a call's thoughtSignature, which GroupMessageFlattenProcessor does
//     not copy from a group's tools.
//
// The pipeline's output itself stays what the reference makes of it (the
// conformance cases); only the provider's request differs.
func WithInput(msgs []enginecore.Message) Option {
	return func(o *options) { o.input = msgs }
}

// An inputIndex holds, for each call id of a pipeline's input, its calls
// in order with what the input says of each.
type inputIndex struct {
	calls map[string][]inputCall
}

type inputCall struct {
	signature string
	result    []part
	hasResult bool
}

// newInputIndex reads msgs: assistant messages' tools (or tool_calls),
// tool messages, and the children of group messages with the results
// their tools carry. It returns nil for no messages.
func newInputIndex(msgs []enginecore.Message) *inputIndex {
	if len(msgs) == 0 {
		return nil
	}
	x := &inputIndex{calls: map[string][]inputCall{}}
	results := map[string][][]part{} // call id → results of tool messages, in order
	var add func(m map[string]any)
	add = func(m map[string]any) {
		for _, key := range [...]string{"tools", "tool_calls"} {
			for _, c := range asList(m[key]) {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				if id == "" {
					continue
				}
				ic := inputCall{}
				ic.signature, _ = cm[FieldThoughtSignature].(string)
				if r, ok := cm["result"].(map[string]any); ok {
					ic.result, _ = contentParts(r["content"])
					ic.hasResult = true
				}
				x.calls[id] = append(x.calls[id], ic)
			}
		}
		for _, c := range asList(m["children"]) {
			if cm, ok := c.(map[string]any); ok {
				add(cm)
			}
		}
	}
	for _, m := range msgs {
		if m["role"] == "tool" {
			if id, _ := m["tool_call_id"].(string); id != "" {
				parts, _ := contentParts(m["content"])
				results[id] = append(results[id], parts)
			}
			continue
		}
		add(m)
	}
	// The k-th tool message of an id answers the k-th call of it that
	// carries no result of its own.
	for id, rs := range results {
		calls := x.calls[id]
		k := 0
		for i := range calls {
			if calls[i].hasResult {
				continue
			}
			if k == len(rs) {
				break
			}
			calls[i].result, calls[i].hasResult = rs[k], true
			k++
		}
	}
	return x
}

// call returns the input's call of id that is the k-th (from 1) of the m
// calls of id in the pipeline's output. The two lists are aligned at
// their ends, since a pipeline drops old history, not recent.
func (x *inputIndex) call(id string, k, m int) (inputCall, bool) {
	if x == nil {
		return inputCall{}, false
	}
	calls := x.calls[id]
	j := len(calls) - m + k - 1
	if j < 0 || j >= len(calls) {
		return inputCall{}, false
	}
	return calls[j], true
}

// signature returns the thoughtSignature the input holds for that call.
func (x *inputIndex) signature(id string, k, m int) string {
	c, _ := x.call(id, k, m)
	return c.signature
}

// result returns the result the input holds for that call.
func (x *inputIndex) result(id string, k, m int) ([]part, bool) {
	c, ok := x.call(id, k, m)
	return c.result, ok && c.hasResult
}
