package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/convstream/convstream/internal/cliflags"
)

// TestNATSFlagsAlike: the worker's help shows every NATS connection flag
// of cliflags with its environment variable, and no other. convctl's
// TestNATSFlagsAlike checks its commands against the same list, so the two
// expose the same flags and variables.
func TestNATSFlagsAlike(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseFlags([]string{"-help"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	if err := cliflags.CheckNATSHelp(help.String()); err != nil {
		t.Error(err)
	}
}
