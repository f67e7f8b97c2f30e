package hugepages

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// AdviseHeap makes the next n bytes of address space the Go heap grows
// into eligible for transparent huge pages when the system's mode is
// Madvise, where the runtime would otherwise back it with 4 KiB pages and
// take a page fault for each. It returns how many bytes are marked.
//
// The runtime offers no way to ask for this, so AdviseHeap borrows one:
// it allocates n bytes in chunks, which the heap maps without touching,
// marks them with MADV_HUGEPAGE, and frees them at once with a
// collection. The mark belongs to the mapping, which the heap keeps: the
// runtime gives the pages back to the system when it has no use for them
// (MADV_DONTNEED keeps the mark), and hands the range out again from its
// lowest addresses first, so the heap's growth from here on lands in it.
// Nothing stays allocated; the runtime's own page metadata for the range
// takes about n/1024 bytes.
//
// It acts once per process, as the heap is the process's: allocating the
// range again would have the runtime clear it, touching every page, since
// it counts freed pages as dirty until it gives them back. Later calls
// return what the first did. (Chunks bound the same cost at the first
// call: a chunk that starts on pages the heap has used and freed is
// cleared, one of ChunkBytes, not the whole range.)
//
// It refuses where reserving n bytes of address space could fail or cost
// memory: on a 32-bit system, under strict overcommit
// (vm.overcommit_memory 2, where the range would count against the
// commit limit for good), under an address space limit (RLIMIT_AS) below
// 2n, and in a build with the race detector (whose shadow of the range
// took 2 GB for 4 GiB). A failed madvise (a kernel without transparent
// huge pages) is returned after the range is freed.
func AdviseHeap(n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	heapAdvice.once.Do(func() {
		heapAdvice.err = adviseHeap(n)
		if heapAdvice.err == nil {
			heapAdvice.n = n
		}
	})
	return heapAdvice.n, heapAdvice.err
}

// heapAdvice is the first AdviseHeap's result: process-wide, like the
// heap it describes.
var heapAdvice struct {
	once sync.Once
	n    int64
	err  error
}

// ChunkBytes is the size of the allocations AdviseHeap marks.
const ChunkBytes = 16 << 20

func adviseHeap(n int64) error {
	if raceEnabled {
		return errors.New("hugepages: heap address space not reserved under the race detector, whose shadow memory would back it")
	}
	if strconv.IntSize < 64 {
		// A failed allocation of the range would end the process.
		return errors.New("hugepages: heap address space not reserved on a 32-bit system")
	}
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && string(bytes.TrimSpace(b)) == "2" {
		return errors.New("hugepages: strict overcommit (vm.overcommit_memory 2): heap address space not reserved")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != ^uint64(0) && uint64(n) > lim.Cur/2 {
		return fmt.Errorf("hugepages: address space limit (RLIMIT_AS) %d bytes: %d bytes of heap address space not reserved", lim.Cur, n)
	}
	err := advise(n)
	// The range is garbage now: free it so that the heap grows into it.
	runtime.GC()
	if err != nil {
		return fmt.Errorf("hugepages: madvise %d bytes of heap: %w", n, err)
	}
	return nil
}

// advise allocates n bytes in chunks and marks them with MADV_HUGEPAGE.
// It is a function of its own so that the chunks are dead when it
// returns; each is held until then, so that the next lands above it.
func advise(n int64) error {
	chunks := make([][]byte, 0, (n+ChunkBytes-1)/ChunkBytes)
	var err error
	for left := n; left > 0; left -= ChunkBytes {
		b := make([]byte, min(left, ChunkBytes))
		chunks = append(chunks, b)
		if e := syscall.Madvise(b, syscall.MADV_HUGEPAGE); e != nil && err == nil {
			err = e
		}
	}
	runtime.KeepAlive(chunks)
	return err
}
