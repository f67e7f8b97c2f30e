package hugepages

import (
	"bytes"
	"os"
)

// enabledPath is where Linux tells the mode of transparent huge pages.
const enabledPath = "/sys/kernel/mm/transparent_hugepage/enabled"

// Modes of transparent huge pages, as Linux names them.
const (
	Always  = "always"  // anonymous memory gets huge pages where it can
	Madvise = "madvise" // only memory a process marks with MADV_HUGEPAGE
	Never   = "never"   // no huge pages
)

// Mode returns the system's mode of transparent huge pages (Always,
// Madvise or Never), or "" when it cannot be read: not Linux, or a kernel
// without them.
func Mode() string {
	b, err := os.ReadFile(enabledPath)
	if err != nil {
		return ""
	}
	return parseMode(b)
}

// parseMode returns the mode that the file enabledPath holds: the word in
// brackets among those offered, as in "always [madvise] never".
func parseMode(b []byte) string {
	_, rest, ok := bytes.Cut(b, []byte("["))
	if !ok {
		return ""
	}
	mode, _, ok := bytes.Cut(rest, []byte("]"))
	if !ok {
		return ""
	}
	return string(mode)
}

// HeapOnHugePages reports whether a Go heap gets huge pages in mode: only
// in Always, since the runtime marks none of its heap with MADV_HUGEPAGE
// (GODEBUG=disablethp=1 takes them away even then).
func HeapOnHugePages(mode string) bool { return mode == Always }
