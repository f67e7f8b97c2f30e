package conversation

import "slices"

// runCache keeps the virtual message of each assistant run a walk emitted,
// with the messages it was built from. Messages are immutable (an update
// replaces the *Message), so a run whose inputs are the same pointers would
// build the same virtual message, and a later walk of the same conversation
// reuses it instead. Conversation keeps one per index; Parse has none.
type runCache struct {
	runs map[int32]*cachedRun // by the position of the run's first assistant
}

type cachedRun struct {
	inputs []*Message
	fields map[string]any
	msg    *Message // fields finished and wrapped, made on first use
}

// message returns the run's finished flat-list message.
func (r *cachedRun) message() *Message {
	if r.msg == nil {
		r.msg = finishVirtual(r.fields)
	}
	return r.msg
}

// newRunCache returns an empty cache; its map is made on first use, as a
// conversation without assistant runs of tools never needs one.
func newRunCache() *runCache { return &runCache{} }

// get returns the virtual message of the run, building it only when its
// inputs changed since the last walk.
func (c *runCache) get(w *flatWalker, chain, tools []int32, blocks []signalBlock, completions []int32) *cachedRun {
	inputs := runInputs(w.ix, chain, tools, blocks, completions)
	if e, ok := c.runs[chain[0]]; ok && slices.Equal(e.inputs, inputs) {
		return e
	}
	e := &cachedRun{inputs: inputs, fields: w.assistantGroupMessage(chain, tools, blocks, completions, nil)}
	if c.runs == nil {
		c.runs = map[int32]*cachedRun{}
	}
	c.runs[chain[0]] = e
	return e
}

// runInputs lists every message an assistant-group message is built from;
// nil separates the groups so that different splits never compare equal.
func runInputs(ix *index, chain, tools []int32, blocks []signalBlock, completions []int32) []*Message {
	n := len(chain) + len(tools) + len(completions) + 3
	for _, b := range blocks {
		n += len(b.callbacks) + 2
	}
	out := make([]*Message, 0, n)
	for _, p := range chain {
		out = append(out, ix.msg(p))
	}
	out = append(out, nil)
	for _, p := range tools {
		out = append(out, ix.msg(p))
	}
	out = append(out, nil)
	for _, b := range blocks {
		out = append(out, ix.msg(b.source))
		for _, p := range b.callbacks {
			out = append(out, ix.msg(p))
		}
		out = append(out, nil)
	}
	out = append(out, nil)
	for _, p := range completions {
		out = append(out, ix.msg(p))
	}
	return out
}
