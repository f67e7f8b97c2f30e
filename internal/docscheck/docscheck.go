// Package docscheck reads the project's Markdown reference documents for
// the tests that keep them true: their links, the section names they cite,
// and their tables of flags and metrics.
//
// It reads Markdown as the docs write it (ATX headings, pipe tables,
// fenced code blocks), not Markdown in general.
package docscheck

import (
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Doc is one Markdown document.
type Doc struct {
	// Path is where it was read from.
	Path string
	// Lines are its lines, fenced code blocks blanked (so that nothing in
	// an example counts as a link, a heading or a table).
	Lines []string
	// Headings are its headings' texts, in order.
	Headings []string
}

// Read reads the document at path.
func Read(path string) (*Doc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(b)), nil
}

// Parse reads text as the document at path.
func Parse(path, text string) *Doc {
	d := &Doc{Path: path, Lines: strings.Split(text, "\n")}
	fenced := false
	for i, l := range d.Lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			d.Lines[i] = ""
			continue
		}
		if fenced {
			d.Lines[i] = ""
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			d.Headings = append(d.Headings, strings.TrimSpace(m[1]))
		}
	}
	return d
}

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// Anchors returns the anchors GitHub gives the document's headings: the
// heading lowercased, punctuation other than '-' and '_' dropped, spaces
// made '-', and "-1", "-2", ... after repeats.
func (d *Doc) Anchors() map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, h := range d.Headings {
		a := Slug(h)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// Slug returns the anchor GitHub gives a heading (its first occurrence).
func Slug(heading string) string {
	heading = strings.ToLower(markupRE.ReplaceAllString(heading, "$1"))
	var b strings.Builder
	for _, r := range heading {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && !strings.ContainsRune("–—’“”…×≈", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markupRE matches inline markup whose text counts in a heading's anchor:
// code spans, emphasis and links.
var markupRE = regexp.MustCompile("`([^`]*)`|\\*\\*([^*]*)\\*\\*|\\[([^\\]]*)\\]\\([^)]*\\)")

// Text returns the document as one line: its lines joined with spaces
// and every run of white space made one space, so that a phrase broken
// over lines is found whole.
func (d *Doc) Text() string {
	return strings.Join(strings.Fields(strings.Join(d.Lines, " ")), " ")
}

// Names says whether name (white space and case aside) is a section of
// the document: part of a heading, or a bold lead (**name**) of a
// paragraph or item of its own.
func (d *Doc) Names(name string) bool {
	name = normal(markupRE.ReplaceAllString(name, "$1$2$3"))
	for _, h := range d.Headings {
		if strings.Contains(normal(markupRE.ReplaceAllString(h, "$1$2$3")), name) {
			return true
		}
	}
	for i, l := range d.Lines {
		l = strings.TrimLeft(strings.TrimSpace(l), "-+0123456789. ")
		if !strings.HasPrefix(l, "**") {
			continue
		}
		// A lead may be broken over lines.
		lead := strings.Join(append([]string{l[2:]}, d.Lines[i+1:min(i+4, len(d.Lines))]...), " ")
		if lead, _, ok := strings.Cut(lead, "**"); ok && strings.HasPrefix(normal(lead), name) {
			return true
		}
	}
	return false
}

func normal(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
