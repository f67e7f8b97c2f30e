package conversation

import (
	"slices"
	"unsafe"
)

// arena keeps the memory of a conversation's appended messages together:
// their structs and extras in slabs, their JSON in chunks, each sized from
// what the conversation holds already. A worker holds thousands of
// conversations that each grow by an event at a time, amid short-lived
// garbage of the same sizes. A message allocated on its own lands in a
// span of mostly garbage, so the garbage collector's mark touches a page
// or two for every message it keeps, and marking the conversations was
// nearly all of a busy worker's mark. Kept together, a conversation's
// messages are a few objects in a few pages: BenchmarkMarkLiveConversations
// marks in less than half the CPU time (BENCHMARKS.md).
//
// What a deleted or replaced message leaves in the arena stays until the
// conversation goes. An update's replacement is adopted too (a chat
// appends an empty reply and then fills it in) while the copies it leaves
// behind come to at most half the JSON the arena holds; past that,
// replacements keep their own allocation, so that a message updated again
// and again (content streamed into it) does not fill the arena with its
// old versions.
type arena struct {
	slab   []Message  // the current slab; its length is what is handed out
	extras []msgExtra // the same, for the messages' extras
	text   chunk      // the current chunk of JSON
	n      int        // messages adopted
	bytes  int        // JSON bytes adopted
	// dead is the JSON of the messages deleted, or replaced while the
	// arena took their replacements: the copies it holds for nothing. It
	// counts each as if it were in the arena, which one that kept its own
	// allocation is not: an upper bound. Replacements stop being adopted
	// when it would pass bytes/2.
	dead int
}

// The bounds of slab and chunk sizes. A new slab or chunk holds an eighth
// of what the arena holds already (a new slab of extras, a sixteenth of
// its messages), so that the unused end of the last one costs at most
// that (see grown); a chunk is then rounded up to whole copies of the
// JSON that opens it (see write).
const (
	minSlab  = 4
	maxSlab  = 128
	minChunk = 1 << 10
	maxChunk = 32 << 10
	// ownChunk is the size above which a message's JSON keeps its own
	// allocation: it is a page or more on its own anyway.
	ownChunk = maxChunk / 4
)

// adopt returns a copy of m that lives in the arena: the struct, its
// extras and its JSON. m itself is left as it was.
func (a *arena) adopt(m *Message) *Message {
	if len(a.slab) == cap(a.slab) {
		a.slab = make([]Message, 0, grown(a.n, 1, a.n/8, minSlab, maxSlab))
	}
	a.slab = a.slab[:len(a.slab)+1]
	p := &a.slab[len(a.slab)-1]
	*p = *m
	a.n++
	if m.x != nil {
		p.x = a.extra(m.x)
	}
	if len(m.raw) == 0 || len(m.raw) > ownChunk || a.holds(m.raw) {
		return p
	}
	p.rebase(a.write(m.raw))
	return p
}

// place returns data as a string in the arena, and true, or, for JSON
// over ownChunk, as a string of its own, and false: AppendCanonical builds
// its message on it, and adopt then keeps it where it is.
func (a *arena) place(data []byte) (string, bool) {
	if len(data) == 0 || len(data) > ownChunk {
		return string(data), false
	}
	return a.write(unsafe.String(unsafe.SliceData(data), len(data))), true
}

// write copies s to the current chunk, or to a new one when it does not
// fit, and returns the copy.
func (a *arena) write(s string) string {
	if a.text.room() < len(s) {
		size := grown(a.bytes, len(s), a.bytes/8, minChunk, maxChunk)
		// Room for a whole number of messages of this size: a
		// conversation's messages are often alike in size, and a chunk of
		// the least size held two of 340 bytes and lost the third of it.
		if n := len(s); n > 0 {
			size = (size + n - 1) / n * n
		}
		a.text = newChunk(size)
	}
	a.bytes += len(s)
	return a.text.write(s)
}

// grown returns the size of a new slab or chunk, for need more, of an
// arena that holds held already: share, within least and most. But the
// first holds just need (a message, or its JSON), and the second makes up
// the least size when that holds need: many conversations hold a single
// message, and a chunk of the least size would hold twice its JSON in
// room.
func grown(held, need, share, least, most int) int {
	switch {
	case held == 0:
		return need
	case held < least && least-held >= need:
		return least - held
	}
	return max(min(max(share, least), most), need)
}

// holds reports whether s lies in the current chunk (placed there).
func (a *arena) holds(s string) bool { return within(a.text.String(), s) }

// adoptReplacement is adopt for m, which replaces old, while the copies
// replacements leave behind stay within bounds; otherwise it returns m.
func (a *arena) adoptReplacement(m, old *Message) *Message {
	if 2*(a.dead+len(old.raw)) > a.bytes {
		return m
	}
	a.dead += len(old.raw)
	return a.adopt(m)
}

// slack is the memory of the current slab, extras slab and chunk that is
// not handed out yet: up to an eighth of what the arena holds, or the
// least sizes, which for a conversation of one message is most of it.
func (a *arena) slack() int {
	n := (cap(a.slab)-len(a.slab))*int(unsafe.Sizeof(Message{})) +
		(cap(a.extras)-len(a.extras))*int(unsafe.Sizeof(msgExtra{}))
	return n + a.text.room()
}

// extra returns a copy of x in the arena, with its own tools and rare
// parts, which the message's strings are rewritten in.
func (a *arena) extra(x *msgExtra) *msgExtra {
	if len(a.extras) == cap(a.extras) {
		a.extras = make([]msgExtra, 0, grown(a.n, 1, a.n/16, minSlab, maxSlab))
	}
	a.extras = a.extras[:len(a.extras)+1]
	p := &a.extras[len(a.extras)-1]
	*p = *x
	p.tools = slices.Clone(x.tools)
	if x.rare != nil {
		r := *x.rare
		p.rare = &r
	}
	return p
}

// chunk is a block of JSON text written from its start on. What it has
// handed out is never written again, so strings over it stay valid while
// it fills. It is a pointer and two lengths in the arena rather than a
// strings.Builder, which is an object of 32 bytes of its own: a fifth of
// what a conversation of one short message holds beside its JSON
// (TestShortConversations in streams). Its lengths fit 32 bits: a chunk
// is at most maxChunk rounded up to whole messages of at most ownChunk.
type chunk struct {
	base     *byte
	len, cap int32
}

// newChunk returns an empty chunk of at least size bytes: the whole size
// class the allocator rounds it up to.
func newChunk(size int) chunk {
	b := slices.Grow([]byte(nil), size)
	return chunk{base: unsafe.SliceData(b), cap: int32(cap(b))}
}

// room is how many bytes the chunk has left.
func (c chunk) room() int { return int(c.cap - c.len) }

// write copies s to the chunk, which has room for it, and returns the copy.
func (c *chunk) write(s string) string {
	if len(s) == 0 {
		return ""
	}
	dst := unsafe.Slice(c.base, c.cap)[c.len:]
	copy(dst, s)
	c.len += int32(len(s))
	return unsafe.String(&dst[0], len(s))
}

// String returns what the chunk holds.
func (c chunk) String() string { return unsafe.String(c.base, c.len) }
