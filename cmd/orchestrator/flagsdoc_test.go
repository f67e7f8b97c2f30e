package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/convstream/convstream/internal/docscheck"
)

// TestFlagsDocumented: docs/flags.md, "cmd/orchestrator", lists every
// flag of the orchestrator's -help once, with its environment variable,
// and every default it writes as code is the one -help shows.
func TestFlagsDocumented(t *testing.T) {
	var help bytes.Buffer
	if err := run(context.Background(), []string{"-help"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	problems, err := docscheck.FlagsProblems("../../docs/flags.md", "cmd/orchestrator", help.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
