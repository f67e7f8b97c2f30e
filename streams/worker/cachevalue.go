package worker

// A convState is what the lanes' caches hold (internal/convcache): these
// methods are what a cache asks of it.

// Key returns the conversation's id.
func (st *convState) Key() string { return st.id }

// Weight approximates the memory st holds (see weight).
func (st *convState) Weight() int64 { return st.weight() }

// Settled reports whether nothing pending needs st's conversation soon
// (see settled).
func (st *convState) Settled() bool { return st.settled() }

// Compact lets go of what an idle state rebuilds when next used: settled,
// so with no store pending, its store state goes (the next event makes a
// new one), and its conversation is compacted (see
// conversation.Conversation.Compact).
func (st *convState) Compact() {
	st.dropStore()
	if st.conv != nil {
		st.conv.Compact()
	}
}
