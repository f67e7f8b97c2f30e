package convcache

// item is a value for the tests: a conversation's state as far as a cache
// sees it.
type item struct {
	id        string
	weight    int64
	busy      bool // not settled: a store queued or being written
	compacted int  // how many times Compact ran
}

func (it *item) Key() string   { return it.id }
func (it *item) Weight() int64 { return it.weight }
func (it *item) Settled() bool { return !it.busy }

// Compact halves the item's weight, as compacting a conversation lets go
// of what it rebuilds when next used.
func (it *item) Compact() {
	it.compacted++
	it.weight /= 2
}

// newCache returns a cache of items with a budget of its own.
func newCache(capacity int, maxBytes int64, cfg Config[*item]) *Cache[*item] {
	return New(capacity, maxBytes, cfg)
}
