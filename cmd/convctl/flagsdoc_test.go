package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/docscheck"
)

// otherTools are flags the docs name of commands that are not convstream's:
// helm's --set, the load generator's --worker-pprof.
var otherTools = map[string]bool{"set": true, "worker-pprof": true}

var docFlagRE = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)

// TestDocFlagsExist: every --flag README.md and docs/*.md name is a flag
// of a convctl command's -help or of cmd/worker or cmd/orchestrator (as
// docs/flags.md lists them, which TestFlagsDocumented holds to their
// -help), so that a renamed or removed flag leaves no doc behind. A name
// ending in "-" (--cache-*) must begin one.
func TestDocFlagsExist(t *testing.T) {
	known := map[string]bool{}
	for name := range commands() {
		var out bytes.Buffer
		dispatch(context.Background(), []string{name, "--help"}, strings.NewReader(""), &out, &out)
		for _, f := range docscheck.ParseHelp(out.String()) {
			known[f.Name] = true
		}
	}
	if len(known) < 30 {
		t.Fatalf("convctl's commands' --help list %d flags in all: the help format changed?", len(known))
	}
	reference, err := docscheck.Read("../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{"cmd/worker", "cmd/orchestrator"} {
		flags, err := reference.FlagTables(section)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flags {
			known[f.Name] = true
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(docs, "../../README.md") {
		doc, err := docscheck.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range doc.Lines {
			for _, m := range docFlagRE.FindAllStringSubmatch(l, -1) {
				if name := m[1]; !known[name] && !otherTools[name] && !prefixOfKnown(name, known) {
					t.Errorf("%s:%d: --%s is no flag of convctl, cmd/worker or cmd/orchestrator: rename it or remove it", strings.TrimPrefix(p, "../../"), i+1, name)
				}
			}
		}
	}
}

// prefixOfKnown says whether name, ending in "-" (--cache-*), begins a
// known flag.
func prefixOfKnown(name string, known map[string]bool) bool {
	if !strings.HasSuffix(name, "-") {
		return false
	}
	for k := range known {
		if strings.HasPrefix(k, name) {
			return true
		}
	}
	return false
}
