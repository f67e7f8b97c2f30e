package convcache

// Value is what a cache holds: in a worker, a conversation's state. A
// value is compared with == (to keep the one in use), so V is a pointer in
// practice.
type Value interface {
	comparable
	// Key identifies the value in its cache.
	Key() string
	// Weight approximates the memory the value holds now, in bytes.
	Weight() int64
	// Settled reports whether nothing pending needs the value soon; a
	// sweep compacts or lets go of settled values only.
	Settled() bool
	// Compact lets go of what the value can rebuild when next used (a
	// sweep then weighs it again).
	Compact()
}

// Reason says why a cache lets go of a value.
type Reason uint8

const (
	Invalid Reason = iota // dropped: rebuilt when next needed
	ForRoom               // evicted for the room of other values
	Unused                // unused for the sweeps given (see Cache.Sweep)
)

// Held is what a cache knows of a value it holds.
type Held struct {
	// Weight is the value's weight when last measured (Value.Weight).
	Weight int64
	// Compacted is set while the value is compacted and unused since.
	Compacted bool
}
