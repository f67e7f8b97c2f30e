package hugepages

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeapGrowsIntoAdvisedRange: after AdviseHeap, the heap's next large
// allocations land in the mappings marked for huge pages. AdviseHeap
// relies on the runtime handing freed heap address space out again from
// its lowest addresses (TestAdviseHeap checks only the marking); this
// checks that the Go version in go.mod still does.
func TestHeapGrowsIntoAdvisedRange(t *testing.T) {
	if Mode() == "" {
		t.Skip("a kernel without transparent huge pages")
	}
	if raceEnabled {
		t.Skip("AdviseHeap refuses under the race detector")
	}
	marked, err := AdviseHeap(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	var held [][]byte
	inside := 0
	for range marked / 2 / size {
		b := make([]byte, size)
		held = append(held, b)
		if advisedAt(t, uintptr(unsafe.Pointer(&b[0])), size) {
			inside++
		}
	}
	if inside*2 < len(held) {
		t.Errorf("%d of %d allocations of %d bytes in memory marked for huge pages (%d bytes marked)", inside, len(held), size, marked)
	}
}

// advisedAt reports whether [addr, addr+n) lies in one mapping of this
// process that /proc/self/smaps flags for huge pages ("hg").
func advisedAt(t *testing.T, addr uintptr, n int) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var in bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if span, _, ok := strings.Cut(line, " "); ok {
			if lo, hi, ok := strings.Cut(span, "-"); ok {
				start, err1 := strconv.ParseUint(lo, 16, 64)
				end, err2 := strconv.ParseUint(hi, 16, 64)
				if err1 == nil && err2 == nil {
					in = uint64(addr) >= start && uint64(addr)+uint64(n) <= end
					continue
				}
			}
		}
		if k, v, ok := strings.Cut(line, ":"); ok && k == "VmFlags" && in {
			return strings.Contains(" "+v+" ", " hg ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}
