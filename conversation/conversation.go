package conversation

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Errors returned by Conversation.
var (
	ErrMessageExists   = errors.New("conversation: message already exists")
	ErrMessageNotFound = errors.New("conversation: message not found")
	ErrCycle           = errors.New("conversation: parent cycle")
	ErrInvalidPatch    = errors.New("conversation: invalid patch")
)

// Conversation is the live state of one conversation: its messages in append
// order and its message groups. It is not safe for concurrent use.
type Conversation struct {
	opts   options
	msgs   msgTable
	groups []*MessageGroup

	// ix is the index of the preprocessed messages, kept up to date in place
	// by appends while the conversation is simple (see index.simple); nil
	// when it must be rebuilt.
	ix *index
	// flat is the last flat list, up to date while current (below) is set.
	flat []*Message
	// walk is the finished walk that built flat, journaled so that it can
	// resume (see perf_flat_resume.go); nil when there is none to resume. Its
	// read set tells whether an append touches what it looked at: one that
	// does not leaves flat as it is, one that does makes the walk resume
	// from resumeAt, the first step (plus one) that looked.
	walk *flatWalker
	// processed is the walk's set of shown messages, kept for reuse.
	processed *markSet
	// The small fields sit together: the conversation then takes 240
	// bytes rather than 256 (TestShortConversations in streams).
	resumeAt int32
	current  bool
	// journalSteps is how many steps a walk keeps journaled: resumeKeep
	// unless a test says otherwise.
	journalSteps int32
	// smallWalk is how many messages a conversation may have and keep no
	// index or walk between reads: smallConversation unless a test says
	// otherwise.
	smallWalk int32
	// arena holds the appended messages (see arena).
	arena arena
	// bytes is the sum of the messages' footprints (see Bytes).
	bytes int
}

// NewConversation returns an empty conversation. Options are those of Parse;
// WithMaxMessages bounds how many messages it accepts.
func NewConversation(opts ...Option) *Conversation {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Conversation{opts: o, msgs: newMsgTable(), journalSteps: resumeKeep, smallWalk: smallConversation}
}

// Bytes approximates the memory the conversation holds:
//   - its messages (MessageBytes): their JSON plus a fixed allowance each
//     for the message and its entries in the table and the index, and
//     what the arena holds beyond that, the old versions of updated and
//     deleted messages and the room not yet used;
//   - what a conversation holds however few its messages, and until
//     Compact its index and walk state (see conversationOverhead);
//   - the objects decoded to build virtual messages (see DecodedFactor).
//
// Not counted: groups, and the derived messages of the flat list, whose
// JSON the caller has when it encodes them (see Message.Derived). In
// streams, TestCachedMessageMemory, TestShortConversations and
// TestCorpusMemoryEstimate check that it covers what conversations hold.
func (c *Conversation) Bytes() int {
	n := c.MessageBytes() + conversationOverhead
	if c.ix != nil || c.walk != nil {
		n += walkOverhead + walkPerMessage*min(c.msgs.len(), 2*resumeKeep)
	}
	if c.ix != nil && c.ix.views != nil {
		n += DecodedFactor * c.ix.views.json
	}
	return n
}

// DecodedFactor approximates what a message's object decoded into Go maps
// holds, in multiples of its JSON: Bytes counts so the objects the walk
// keeps decoded to build virtual messages from, and a caller that keeps a
// flat list can count so its derived messages (see Message.Derived),
// whose JSON it has. Maps of a few short fields cost many times their
// JSON; the factor is fitted to the conformance corpus, whose
// conversations are rich in virtual messages (TestCorpusMemoryEstimate in
// streams).
const DecodedFactor = 7

// MessageBytes is the part of Bytes that grows with the messages: their
// JSON and allowance, and the old copies and unused room of the arena
// that holds them.
func (c *Conversation) MessageBytes() int { return c.bytes + c.arena.dead + c.arena.slack() }

// What Bytes allows for the parts of a conversation that do not grow with
// its messages, which in a short one are most of it (TestShortConversations
// in streams measures them): the Conversation and its tables; and, from
// its ninth message until Compact (see smallConversation), the index and
// the walk state that make the next append a few steps, whose journal of
// the last 2*resumeKeep steps (about two a message) grows with the first
// messages only.
const (
	conversationOverhead = 512
	walkOverhead         = 1536
	walkPerMessage       = 192
)

// Len returns the number of messages.
func (c *Conversation) Len() int { return c.msgs.len() }

// Get returns the message with the given id.
func (c *Conversation) Get(id string) (*Message, bool) {
	return c.msgs.get(id)
}

// Messages returns the messages in append order.
func (c *Conversation) Messages() []*Message {
	return c.msgs.messages()
}

// Groups returns the message groups in the order they were first upserted.
func (c *Conversation) Groups() []*MessageGroup { return c.groups }

// Append adds a new message. Appending an id that exists fails with
// ErrMessageExists unless the message is identical (a redelivery), which is
// a no-op. A message whose parent chain would loop back to itself fails
// with ErrCycle.
func (c *Conversation) Append(m *Message) error {
	if m == nil {
		return fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	_, err := c.add(m)
	return err
}

// AppendCanonical appends the message whose JSON is data, bytes that
// Message.JSON returned, as Append(NewMessageCanonical(data)) does, but
// copies data once, straight into the conversation's memory, instead of
// twice. It is for rebuilding a conversation from storage that guards
// what JSON returned with a checksum of its own. data is not kept.
func (c *Conversation) AppendCanonical(data []byte) error {
	raw, placed := c.arena.place(data)
	m, err := newMessageCanonical(raw)
	if err == nil {
		var added bool
		if added, err = c.add(m); added {
			return nil
		}
	}
	if placed {
		c.arena.dead += len(raw) // written for a message that was not added
	}
	return err
}

// add appends m unless it is refused or is a copy of a present message
// (see Append), and reports whether it did.
func (c *Conversation) add(m *Message) (bool, error) {
	if old, ok := c.msgs.getHashed(m.ID(), m.idHash); ok {
		if sameFields(old, m) {
			return false, nil
		}
		return false, fmt.Errorf("%w: %q", ErrMessageExists, m.ID())
	}
	if c.opts.maxMessages > 0 && c.msgs.len() >= int(c.opts.maxMessages) {
		return false, fmt.Errorf("%w: limit %d", ErrTooManyMessages, c.opts.maxMessages)
	}
	waited := c.msgs.referenced(m.idHash) > 0 // something names m as its parent
	if waited || (m.hasParent && m.parentID() == m.ID()) {
		if err := c.checkCycle(m.ID(), m); err != nil {
			return false, err
		}
	}
	m = c.arena.adopt(m)
	c.msgs.compact()
	c.msgs.add(m)
	c.bytes += m.footprint()
	switch {
	case c.ix == nil:
		c.current = false // a small conversation's flat list, kept without its index (see shed)
	case waited || !c.indexAppend(m):
		c.invalidate()
	}
	return true, nil
}

// invalidate drops the index and the flat list; the next read rebuilds them.
func (c *Conversation) invalidate() {
	c.ix = nil
	c.flat, c.current, c.walk = nil, false, nil
}

// Compact lets go of the index and the journaled walk the conversation keeps
// so that its next change costs a few steps rather than a walk of the whole
// active path. The next read rebuilds them, at about the cost of a Parse.
// A cache calls it on a conversation gone quiet: the garbage collector then
// has about half the objects to mark for it (TestCompactReleases).
func (c *Conversation) Compact() {
	c.ix, c.walk, c.processed, c.resumeAt = nil, nil, nil, 0
	// The flat list stays as a size hint for the next walk: it is the
	// caller's copy too.
	c.current = false
	c.msgs.compact()
}

// indexAppend adds m to the index in place, and drops the flat list if the
// walk that built it looked where m lands. It reports false when m needs a
// rebuild: it changes the shape of the conversation (a compressed group, an
// unusual parent).
func (c *Conversation) indexAppend(m *Message) bool {
	ix := c.ix
	if !ix.simple || m.Role() == "compressedGroup" || m.ID() == "" {
		return false
	}
	if m.flags&flagSubAgent != 0 {
		m = m.withSubAgent()
	}
	slot := slotRoot
	switch {
	case m.hasParent && m.parentID() == "":
		return false
	case m.hasParent:
		if p, ok := ix.ids.find(m.parentID(), m.parentHash); ok {
			slot = p
		}
	case !m.parentNull && !m.parentTruthy:
		return false
	}
	if ix.ids.add(m) {
		return false
	}
	pos := int32(len(ix.ids.msgs) - 1)
	ix.msgs = ix.ids.msgs
	ix.appendChild(slot, pos, m.inThread)
	if w := c.walk; w != nil {
		if at := w.reads.touched(slot, m.ID()); at != 0 {
			c.current = false
			c.resumeAt = earliest(c.resumeAt, at)
		}
	} else {
		c.current = false
	}
	return true
}

// Update applies a JSON merge patch (RFC 7386) to the message with the given
// id: fields set to null are removed, objects merge recursively. The id
// cannot change.
func (c *Conversation) Update(id string, patch map[string]any) error {
	old, ok := c.msgs.get(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrMessageNotFound, id)
	}
	if v, ok := patch["id"]; ok && v != id {
		return fmt.Errorf("%w: the id cannot change", ErrInvalidPatch)
	}
	fields := MergePatch(old.view(), patch)
	fields["id"] = id
	m, err := NewMessage(fields)
	if err != nil {
		return err
	}
	if m.parentID() != old.parentID() || m.hasParent != old.hasParent {
		if err := c.checkCycle(id, m); err != nil {
			return err
		}
	}
	m = c.arena.adoptReplacement(m, old)
	c.msgs.replace(m)
	c.bytes += m.footprint() - old.footprint()
	c.current, c.walk = false, nil // the old list stays only as a size hint
	if c.ix != nil && !c.indexReplace(old, m) {
		c.invalidate()
	}
	return nil
}

// indexReplace swaps an updated message into the index when the update
// leaves the shape of the conversation as it was.
func (c *Conversation) indexReplace(old, m *Message) bool {
	same := old.parentID() == m.parentID() && old.hasParent == m.hasParent && old.parentNull == m.parentNull &&
		old.Role() == m.Role() && old.inThread == m.inThread && old.groupID() == m.groupID() &&
		old.agentID() == m.agentID() && old.flags&flagSubAgent == 0 && m.flags&flagSubAgent == 0
	if !same {
		return false
	}
	p, ok := c.ix.ids.find(m.ID(), m.idHash)
	if !ok {
		return false
	}
	c.ix.ids.msgs[p] = m
	return true
}

// Restore undoes an Update: old, which Get returned before it, takes the
// place of the message with its id again, as if the update had not been
// applied. A caller that refuses an update after applying it (its result
// is over a limit) undoes it so, at the cost of the next read's rebuild
// rather than of the whole conversation's. It fails with
// ErrMessageNotFound when no message has old's id.
func (c *Conversation) Restore(old *Message) error {
	if old == nil {
		return fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	cur, ok := c.msgs.getHashed(old.ID(), old.idHash)
	if !ok {
		return fmt.Errorf("%w: %q", ErrMessageNotFound, old.ID())
	}
	if cur == old {
		return nil
	}
	c.msgs.replace(old)
	c.bytes += old.footprint() - cur.footprint()
	c.invalidate()
	return nil
}

// Delete removes a message. Its children stay and become roots, as messages
// whose parent is missing do.
func (c *Conversation) Delete(id string) error {
	m, ok := c.msgs.get(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrMessageNotFound, id)
	}
	c.invalidate()
	c.msgs.remove(m.ID(), m.idHash)
	c.bytes -= m.footprint()
	c.arena.dead += len(m.raw) // its JSON stays in the arena
	return nil
}

// UpsertGroup adds a message group or replaces the one with the same id.
func (c *Conversation) UpsertGroup(g *MessageGroup) error {
	if g == nil || g.id.kind != keyString {
		return fmt.Errorf("%w: message group needs a string id", ErrInvalidMessage)
	}
	c.invalidate()
	for i, old := range c.groups {
		if old.id == g.id {
			c.groups[i] = g
			return nil
		}
	}
	c.groups = append(c.groups, g)
	return nil
}

// tableIndex returns the id index of the conversation's messages, as
// preprocess would make it, on the positions of the message table: the
// ids are unique, so the index finds them there rather than in maps of its
// own (for a conversation of 20 messages, about 650 bytes and four objects
// fewer until Compact). The table is compacted first, so that positions
// match; while the index lasts, the table only appends and replaces
// (Delete drops the index). Unless a sub-agent's message needs a copy
// (withSubAgent), the index's messages are the table's order itself.
func (c *Conversation) tableIndex() idIndex {
	c.msgs.compact()
	order := c.msgs.order
	if !slices.ContainsFunc(order, func(m *Message) bool { return m.flags&flagSubAgent != 0 }) {
		return idIndex{msgs: order, table: &c.msgs, shared: true}
	}
	x := idIndex{msgs: make([]*Message, 0, len(order)), table: &c.msgs}
	for _, m := range order {
		if m.flags&flagSubAgent != 0 {
			m = m.withSubAgent()
		}
		x.msgs = append(x.msgs, m)
	}
	return x
}

// Result parses the conversation as it stands. It equals Parse of
// Messages() and Groups(), and reuses the conversation's index and flat
// list where they are current.
func (c *Conversation) Result() (*Result, error) {
	if err := c.indexed(); err != nil {
		return nil, err
	}
	defer c.shed()
	tree, err := c.contextTree()
	if err != nil {
		return nil, err
	}
	// The message map gets its own index: the conversation's changes in place.
	ids := newIDIndex(len(c.ix.msgs))
	for _, m := range c.ix.msgs {
		ids.add(m)
	}
	return &Result{ContextTree: tree, FlatList: c.flat, MessageMap: MessageMap{ids: ids}}, nil
}

// ContextTree returns the context tree of the conversation as it stands
// (the ContextTree of Result), without the message map Result builds.
func (c *Conversation) ContextTree() ([]Node, error) {
	if err := c.indexed(); err != nil {
		return nil, err
	}
	defer c.shed()
	return c.contextTree()
}

// contextTree builds the context tree on the current index.
func (c *Conversation) contextTree() ([]Node, error) {
	return (&treeBuilder{ix: c.ix, col: &collector{ix: c.ix}, maxDepth: int(c.opts.maxBranchDepth), sizeHint: len(c.flat)}).build()
}

// smallConversation is how many messages a conversation may have and keep
// no index or walk between reads. Most chats are short, and for them the
// index and the walk state that make the next append a few steps held as
// much as their messages (TestShortConversations in streams: 1,216 of the
// 2,320 bytes a conversation of one message held in a worker), while
// walking a few messages again costs a few microseconds
// (BenchmarkShortConversation: eight appends, the flat list after each,
// 11.5–12.5 µs against 8.1–8.2 µs when kept).
const smallConversation = 8

// small reports whether the conversation keeps no index or walk between
// reads (smallConversation).
func (c *Conversation) small() bool { return c.msgs.len() <= int(c.smallWalk) }

// shed lets go of the index and the walk of a small conversation after a
// read: its flat list stays, current until the next change, which then
// walks from a new index.
func (c *Conversation) shed() {
	if c.small() {
		c.ix, c.walk, c.processed, c.resumeAt = nil, nil, nil, 0
	}
}

// newIndex builds the index of the conversation's messages; unless the
// conversation is small, in the form that appends extend in place.
func (c *Conversation) newIndex() *index {
	ix := buildIndex(c.tableIndex(), c.groups)
	if ix.simple && !c.small() {
		ix.toAppendable()
		ix.runs = newRunCache()
	}
	return ix
}

// indexed brings the index and the flat list up to date. A small
// conversation whose flat list is current gets its index back without a
// walk: the context tree needs none before it (Parse builds it first).
func (c *Conversation) indexed() error {
	if c.ix == nil && c.current {
		c.ix = c.newIndex()
		return nil
	}
	_, err := c.flatList()
	return err
}

// FlatList returns the flat list of the conversation as it stands (the
// FlatList of Result). After an append that lands outside what the last
// walk looked at, it is returned again without a walk; after one that lands
// where the walk looked, the walk resumes from the first step that looked
// there (for an append at the end of the active path, a few steps from its
// end); otherwise the walk of the active path runs, on an index kept up to
// date in place. A small conversation walks its few messages again after
// each change instead. The slice is shared: callers must not modify it.
func (c *Conversation) FlatList() ([]*Message, error) {
	flat, err := c.flatList()
	c.shed()
	return flat, err
}

// flatList is FlatList without shed.
func (c *Conversation) flatList() ([]*Message, error) {
	if c.current {
		return c.flat, nil
	}
	if c.ix == nil {
		c.walk = nil
		c.ix = c.newIndex()
	}
	if w := c.walk; w != nil && c.resumeAt > 1 {
		ok, err := w.resume(c.resumeAt - 1)
		if err != nil {
			c.walk = nil
			return nil, err
		}
		if ok {
			c.flat, c.current, c.resumeAt = w.out, true, 0
			return w.out, nil
		}
	}
	c.walk, c.resumeAt = nil, 0
	ix := c.ix
	// A small conversation's walk is not kept, so it records nothing to
	// resume from: neither what it read nor a journal.
	small := c.small()
	if !small {
		ix.reads = newReadSet(len(ix.msgs))
		defer func() { ix.reads = nil }()
	}
	// The last flat list is a better size hint than the message count,
	// with room to grow in place (as much again, up to 64); a small
	// conversation's list is held at the size it has.
	size := len(ix.msgs)
	if c.flat != nil && !small {
		size = len(c.flat) + min(len(c.flat), 64)
	}
	w := newFlatWalker(ix, &collector{ix: ix}, size, c.processed)
	c.processed = w.processed
	w.reads = ix.reads
	if ix.simple && !small {
		w.journaled(int(c.journalSteps))
	}
	if err := w.flatten(); err != nil {
		return nil, err
	}
	ix.views.sweep()
	c.flat = w.out
	switch {
	case !ix.simple:
		// A conversation of unusual shape is rebuilt on every change.
		return w.out, nil
	case small:
		c.current = true
		return w.out, nil
	}
	w.finish()
	c.walk, c.current = w, true
	return w.out, nil
}

// PathTo returns the messages on the path from the root to leaf, in append
// order, together with the tool results of the assistants on it: the linear
// context that ends at leaf.
func (c *Conversation) PathTo(leaf string) ([]*Message, error) {
	if _, ok := c.msgs.get(leaf); !ok {
		return nil, fmt.Errorf("%w: %q", ErrMessageNotFound, leaf)
	}
	on := map[string]bool{}
	for id, steps := leaf, 0; id != "" && steps <= c.msgs.len(); steps++ {
		m, ok := c.msgs.get(id)
		if !ok || on[id] {
			break
		}
		on[id] = true
		id = m.parentID()
	}
	out := make([]*Message, 0, len(on))
	for _, m := range c.Messages() {
		if on[m.ID()] {
			out = append(out, m)
			continue
		}
		if m.Role() == "tool" && m.hasParent && on[m.parentID()] && m.parentID() != leaf {
			out = append(out, m)
		}
	}
	return out, nil
}

// checkCycle fails when giving message id the parent chain of m would make
// id its own ancestor.
func (c *Conversation) checkCycle(id string, m *Message) error {
	seen := 0
	for p, h, ok := m.parentID(), m.parentHash, m.hasParent; ok; {
		if p == id {
			return fmt.Errorf("%w: %q would be its own ancestor", ErrCycle, id)
		}
		parent, found := c.msgs.getHashed(p, h)
		if !found {
			return nil
		}
		seen++
		if seen > c.msgs.len() {
			// An existing loop not through id; not this message's doing.
			return nil
		}
		p, h, ok = parent.parentID(), parent.parentHash, parent.hasParent
	}
	return nil
}

func sameFields(a, b *Message) bool {
	x, err1 := a.JSON()
	y, err2 := b.JSON()
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// MergePatch applies a JSON merge patch (RFC 7386) to target and returns the
// result; target is not modified.
func MergePatch(target, patch map[string]any) map[string]any {
	out := maps.Clone(target)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
			continue
		}
		if pv, ok := v.(map[string]any); ok {
			tv, _ := out[k].(map[string]any)
			out[k] = MergePatch(tv, pv)
			continue
		}
		out[k] = v
	}
	return out
}
