// Package convcache holds what a worker's lanes keep in memory: one Cache
// a lane, each letting go of its least recently used values while the
// caches sharing a Share hold more values or bytes than it allows, and
// swept now and then to compact the values left idle and let go of those
// unused for longer. It knows nothing of what it holds but the Value
// interface: a key, a weight, whether anything is pending on it, and how
// to compact it.
//
// Where a change goes:
//   - cache.go: a Cache, its order of use, and what it holds (Get, Peek,
//     Put, Drop, Resize); list.go, the list of its values.
//   - sweep.go: Sweep, compacting idle values and letting go of unused
//     ones.
//   - share.go: the budget the caches share, and how one over it asks
//     another to let go (a trim).
//   - value.go: Value, what a cache holds, and Reason, why it lets a
//     value go.
package convcache
