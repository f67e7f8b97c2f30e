package hugepages

import "errors"

// ErrUnsupported is returned by AdviseHeap where it cannot mark memory
// for huge pages: not Linux.
var ErrUnsupported = errors.New("hugepages: not supported on this system")

// MaxHeapDefault is the most address space DefaultHeapAdvice asks for:
// several times the heap of the load sequences of BENCHMARKS.md (under
// 1 GiB), while the metadata the runtime keeps for it (8 bytes for each
// 8 KiB page, 4 MiB here) stays small. A heap that grows past the range
// is backed by 4 KiB pages beyond it.
const MaxHeapDefault = 4 << 30

// DefaultHeapAdvice returns how much heap address space to mark for huge
// pages under a soft memory limit of limit bytes (math.MaxInt64: none):
// half of it, at most MaxHeapDefault. Half, because until the runtime
// returns the marked space to the system it counts against the limit.
func DefaultHeapAdvice(limit int64) int64 {
	return min(limit/2, MaxHeapDefault)
}
