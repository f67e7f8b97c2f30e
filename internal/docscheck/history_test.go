package docscheck

import (
	"path/filepath"
	"regexp"
	"testing"
)

// historyRE matches what reference docs leave to git and
// bench/EXPERIMENTS.md: an issue of this project (an upstream one is
// named with its project: nats.go issue 1622), a commit, a default or a
// version that was, a figure that was ("(was 58 s)").
var historyRE = regexp.MustCompile(`(?i)(?:^|[^\w./-] ?)(issues? #?\d+)|\b(commit [0-9a-f]{7,40})\b|\b(old default|earlier versions?|previous default)\b|(\((?:was|before:?|previously|formerly) [^)]*\))`)

// upstreamRE matches an upstream project's issue, which a doc may cite.
var upstreamRE = regexp.MustCompile(`(?i)(nats\.go|nats-server|go\.dev|golang/go|jetstream) issues? #?\d+`)

// TestDocsNotHistory: the reference docs cite no issue or commit of this
// project and tell no "old default": they say what is, and history lives
// in git and bench/EXPERIMENTS.md.
func TestDocsNotHistory(t *testing.T) {
	for _, p := range referenceDocs(t) {
		doc, err := Read(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		text := upstreamRE.ReplaceAllString(doc.Text(), "")
		for _, m := range historyRE.FindAllStringSubmatch(text, -1) {
			t.Errorf("%s: %q: reference docs say what is; history goes to git and bench/EXPERIMENTS.md", p, m[1]+m[2]+m[3]+m[4])
		}
	}
}
