package streams

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestErrorPrefixes: the error strings of the packages under streams/
// start with their own package's name ("worker: ", "read: ", "client: "),
// never with "streams: ", which names this package, the contract.
func TestErrorPrefixes(t *testing.T) {
	contract := regexp.MustCompile(`(errors\.New|fmt\.Errorf)\("streams: `)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(path) == "." || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if contract.MatchString(line) {
				t.Errorf("%s:%d: an error string with the contract's prefix: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
