// Package hugepages reads how Linux backs a process's anonymous memory:
// with transparent huge pages of 2 MiB, or with pages of 4 KiB. The Go
// runtime does not ask for huge pages for its heap, so a Go heap gets
// them only when the system's mode is "always"; with "madvise" (the
// default of many distributions) every 4 KiB of heap the process grows
// into costs a page fault. The worker logs the mode at start and the load
// generator prints it with its machine note, since it decides a good part
// of the worker's latency tail (BENCHMARKS.md, docs/operations.md).
package hugepages
