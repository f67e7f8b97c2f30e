package worker

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocMapListsEveryFile checks that doc.go's maintainer map names every
// file of the package, so that a file added without a place in the map
// fails here rather than going unfound.
func TestDocMapListsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b[a-z_]+\.go\b`).FindAllString(string(doc), -1) {
		named[m] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "doc.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		if !named[f] {
			t.Errorf("doc.go's map does not name %s", f)
		}
		delete(named, f)
	}
	for f := range named {
		if !strings.HasSuffix(f, "_test.go") {
			t.Errorf("doc.go's map names %s, which is not a file of the package", f)
		}
	}
}
