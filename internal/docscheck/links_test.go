package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// referenceDocs are the documents whose links and section references
// must resolve: the reference docs, not the history in
// bench/EXPERIMENTS.md (which they may cite) nor the vendored NATS chart.
func referenceDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "BENCHMARKS.md"}
	md, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md {
		docs = append(docs, rel(t, p))
	}
	err = filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == "charts" {
			return filepath.SkipDir // vendored charts
		}
		if !e.IsDir() && strings.HasPrefix(e.Name(), "README") {
			docs = append(docs, rel(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func rel(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.Rel(root, p)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

var (
	// linkRE matches a Markdown link's target: [text](target "title").
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// fileSectionRE matches a section of another document cited by name:
	// docs/events.md, "Live replies" or BENCHMARKS.md, **Huge pages**.
	fileSectionRE = regexp.MustCompile(`([\w./-]+\.md),? (?:"([^"]+)"|\*\*([^*]+)\*\*)`)
	// seeRE matches a section of the same document cited by name:
	// see "Sizing" or see **Huge pages**.
	seeRE = regexp.MustCompile(`\b[Ss]ee (?:also )?(?:"([^"]+)"|\*\*([^*]+)\*\*)`)
	// seePlainRE matches a section of the same document cited by its bare
	// name in parentheses: (see Failure modes).
	seePlainRE = regexp.MustCompile("\\(see ([A-Z][^)\"*;,`]*)\\)")
)

// TestDocLinks: every link of the reference docs to a file of the
// repository names one that exists, and its #anchor, if any, one of that
// document's headings; every section another document is cited by
// (docs/events.md, "Live replies") is a heading or bold lead of that
// document, and every one cited in the same document (see "Sizing",
// see **Huge pages**, (see Failure modes)) of
// this one. A failure names the document, the line and what is missing.
func TestDocLinks(t *testing.T) {
	cache := map[string]*Doc{}
	read := func(p string) *Doc {
		if d, ok := cache[p]; ok {
			return d
		}
		d, err := Read(filepath.Join(root, p))
		if err != nil {
			d = nil
		}
		cache[p] = d
		return d
	}
	for _, p := range referenceDocs(t) {
		doc := read(p)
		if doc == nil {
			t.Fatalf("%s: not readable", p)
		}
		for i, line := range doc.Lines {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				targetPath := p
				if file != "" {
					targetPath = filepath.ToSlash(filepath.Join(filepath.Dir(p), file))
					if _, err := os.Stat(filepath.Join(root, targetPath)); err != nil {
						t.Errorf("%s:%d: link to %s: no such file %s", p, i+1, target, targetPath)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(targetPath, ".md") {
					continue
				}
				if d := read(targetPath); d == nil || !d.Anchors()[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading with anchor #%s", p, i+1, target, targetPath, anchor)
				}
			}
		}
		// Section names are matched on the whole text: a citation may be
		// broken over lines.
		text := doc.Text()
		for _, m := range fileSectionRE.FindAllStringSubmatch(text, -1) {
			file, name := m[1], m[2]+m[3]
			targetPath, ok := citedFile(p, file)
			if !ok {
				t.Errorf("%s: %s, %q: no such file", p, file, name)
				continue
			}
			if d := read(targetPath); d == nil || !d.Names(name) {
				t.Errorf("%s: %s, %q: %s has no section (heading or bold lead) named so", p, file, name, targetPath)
			}
		}
		for _, m := range seeRE.FindAllStringSubmatch(text, -1) {
			name := m[1] + m[2]
			if !doc.Names(name) {
				t.Errorf("%s: see %q: no section (heading or bold lead) of %s is named so", p, name, p)
			}
		}
		for _, m := range seePlainRE.FindAllStringSubmatch(text, -1) {
			if !doc.Names(m[1]) {
				t.Errorf("%s: (see %s): no section (heading or bold lead) of %s is named so", p, m[1], p)
			}
		}
	}
}

// citedFile finds the document a citation names: a path from the
// repository's root (docs/events.md) or from the citing document's
// directory (events.md from docs/operations.md).
func citedFile(from, file string) (string, bool) {
	for _, p := range []string{file, filepath.ToSlash(filepath.Join(filepath.Dir(from), file))} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return p, true
		}
	}
	return "", false
}
