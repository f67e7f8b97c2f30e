package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/convstream/convstream/internal/cliflags"
)

// TestNATSFlagsAlike: convload shows the NATS connection flags of the
// worker and convctl (cliflags), each with its environment variable, and
// no other.
func TestNATSFlagsAlike(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errOut); code != 0 {
		t.Fatalf("convload -h: exit %d", code)
	}
	if err := cliflags.CheckNATSHelp(out.String() + errOut.String()); err != nil {
		t.Error(err)
	}
}
