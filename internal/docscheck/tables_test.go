package docscheck

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxCell is the longest table cell the reference docs may hold, in
// characters: a table is read across, and a cell longer than a short
// paragraph breaks it.
const maxCell = 400

// TestDocTableCellsShort: no table cell of the reference docs is longer
// than maxCell characters; detail goes in a paragraph under the table,
// led by a bold name the cell points to (see **Caches**).
func TestDocTableCellsShort(t *testing.T) {
	for _, p := range referenceDocs(t) {
		doc, err := Read(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range doc.Lines {
			if !strings.HasPrefix(l, "|") {
				continue
			}
			for _, c := range strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|") {
				if n := utf8.RuneCountInString(strings.TrimSpace(c)); n > maxCell {
					t.Errorf("%s:%d: a table cell of %d characters (at most %d): keep the cell short and put the detail in a paragraph under the table, led by a bold name the cell points to (see **Name**)", p, i+1, n, maxCell)
				}
			}
		}
	}
}

// maxReadmeLines bounds README.md: it introduces the project and points
// to the docs, which hold the reference.
const maxReadmeLines = 160

// TestReadmeShort: README.md stays under maxReadmeLines lines.
func TestReadmeShort(t *testing.T) {
	doc, err := Read(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(doc.Lines)
	if n > 0 && doc.Lines[n-1] == "" {
		n-- // the final newline
	}
	if n >= maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move reference detail to docs/", n, maxReadmeLines-1)
	}
}
