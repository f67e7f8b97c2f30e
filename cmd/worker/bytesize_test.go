package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSizes reads every case of testdata/sizes.tsv, the list the Helm
// chart's TestSizeSyntax reads too, so that a size value means the same
// bytes in a flag and in the chart's values.
func TestSizes(t *testing.T) {
	f, err := os.Open("testdata/sizes.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, want, _ := strings.Cut(line, "\t")
		n++
		var b byteSize
		err := b.Set(in)
		if want == "error" {
			if err == nil {
				t.Errorf("size %q accepted as %d", in, b)
			}
			continue
		}
		w, perr := strconv.ParseInt(want, 10, 64)
		if perr != nil {
			t.Fatalf("testdata: %q", line)
		}
		if err != nil || int64(b) != w {
			t.Errorf("size %q = %d, %v; want %d", in, b, err, w)
		}
	}
	if n < 20 {
		t.Fatalf("%d cases", n)
	}
}
