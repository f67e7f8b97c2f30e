package hugepages

import (
	"runtime"
	"testing"
)

// TestParseMode reads the bracketed word of the kernel's file, and
// nothing from text without one.
func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never\n": Madvise,
		"[always] madvise never\n": Always,
		"always madvise [never]\n": Never,
		"always madvise never\n":   "",
		"[always":                  "",
		"":                         "",
	} {
		if got := parseMode([]byte(in)); got != want {
			t.Errorf("parseMode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMode reads this machine's mode: on Linux with transparent huge
// pages, one of the three.
func TestMode(t *testing.T) {
	mode := Mode()
	if mode == "" {
		if runtime.GOOS == "linux" {
			t.Logf("no %s here: a kernel without transparent huge pages", enabledPath)
		}
		return
	}
	switch mode {
	case Always, Madvise, Never:
	default:
		t.Errorf("Mode() = %q, want always, madvise or never", mode)
	}
	if HeapOnHugePages(mode) != (mode == Always) {
		t.Errorf("HeapOnHugePages(%q) = %v", mode, HeapOnHugePages(mode))
	}
}
