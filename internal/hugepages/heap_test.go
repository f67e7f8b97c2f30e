package hugepages

import (
	"math"
	"testing"
)

// TestDefaultHeapAdvice: half the memory limit, at most MaxHeapDefault.
func TestDefaultHeapAdvice(t *testing.T) {
	for limit, want := range map[int64]int64{
		math.MaxInt64: MaxHeapDefault,
		2 << 30:       1 << 30,
		32 << 30:      MaxHeapDefault,
	} {
		if got := DefaultHeapAdvice(limit); got != want {
			t.Errorf("DefaultHeapAdvice(%d) = %d, want %d", limit, got, want)
		}
	}
}
