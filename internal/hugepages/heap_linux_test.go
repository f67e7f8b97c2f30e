package hugepages

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestAdviseHeap marks 64 MiB of heap address space and finds it in the
// process's mappings, flagged for huge pages ("hg").
func TestAdviseHeap(t *testing.T) {
	if Mode() == "" {
		t.Skip("a kernel without transparent huge pages")
	}
	if raceEnabled {
		if _, err := AdviseHeap(1 << 20); err == nil {
			t.Error("AdviseHeap under the race detector: no error")
		}
		return
	}
	const n = 64<<20 + ChunkBytes/2 // a last chunk shorter than the others
	before := advisedBytes(t)
	if got, err := AdviseHeap(n); err != nil || got != n {
		t.Fatalf("AdviseHeap(%d) = %d, %v", n, got, err)
	}
	if got := advisedBytes(t) - before; got < n {
		t.Errorf("mappings flagged for huge pages grew by %d bytes, want at least %d", got, n)
	}
	if got, err := AdviseHeap(0); got != 0 || err != nil {
		t.Errorf("AdviseHeap(0) = %d, %v; want 0, nil", got, err)
	}

	// Once a process: a second call allocates nothing (which would have
	// the runtime clear the freed range, touching all of it) and says
	// what the first did.
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	allocs := m.TotalAlloc
	if got, err := AdviseHeap(2 * n); err != nil || got != n {
		t.Errorf("second AdviseHeap = %d, %v; want %d, nil", got, err, n)
	}
	runtime.ReadMemStats(&m)
	if grew := m.TotalAlloc - allocs; grew > 1<<20 {
		t.Errorf("a second AdviseHeap allocated %d bytes", grew)
	}
}

// advisedBytes adds up the mappings of this process that /proc/self/smaps
// flags for huge pages.
func advisedBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var total, size int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ":"); ok && k == "Size" {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			size = kb << 10
		} else if ok && k == "VmFlags" && strings.Contains(" "+v+" ", " hg ") {
			total += size
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
