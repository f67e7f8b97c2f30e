package hugepages

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// AdviseHeap makes the next n bytes of address space the Go heap grows
// into eligible for transparent huge pages when the system's mode is
// Madvise, where the runtime would otherwise back it with 4 KiB pages and
// take a page fault for each.
//
// The runtime offers no way to ask for this, so AdviseHeap borrows one:
// it allocates n bytes, which the heap maps without touching, marks that
// range with MADV_HUGEPAGE, and frees it at once with a collection. The
// mark belongs to the mapping, which the heap keeps: the runtime gives
// the pages back to the system when it has no use for them (MADV_DONTNEED
// keeps the mark), and hands the range out again from its lowest
// addresses first, so the heap's growth from here on lands in it. Nothing
// stays allocated; the runtime's own page metadata for the range takes
// about n/1024 bytes.
//
// It refuses where reserving n bytes of address space could fail or cost
// memory: under strict overcommit (vm.overcommit_memory 2, where the
// range would count against the commit limit for good) and under an
// address space limit (RLIMIT_AS) below 2n. A failed madvise (a kernel
// without transparent huge pages) is returned after the range is freed.
func AdviseHeap(n int64) error {
	if n <= 0 {
		return nil
	}
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && string(bytes.TrimSpace(b)) == "2" {
		return errors.New("hugepages: strict overcommit (vm.overcommit_memory 2): heap address space not reserved")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != ^uint64(0) && uint64(n) > lim.Cur/2 {
		return fmt.Errorf("hugepages: address space limit (RLIMIT_AS) %d bytes: %d bytes of heap address space not reserved", lim.Cur, n)
	}
	if uint64(n) > uint64(^uint(0)>>1) {
		return fmt.Errorf("hugepages: %d bytes do not fit this system's address space", n)
	}
	err := advise(int(n))
	// The range is garbage now: free it so that the heap grows into it.
	runtime.GC()
	if err != nil {
		return fmt.Errorf("hugepages: madvise %d bytes of heap: %w", n, err)
	}
	return nil
}

// advise allocates n bytes and marks them with MADV_HUGEPAGE. It is a
// function of its own so that the allocation is dead when it returns.
func advise(n int) error {
	b := make([]byte, n)
	return syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
