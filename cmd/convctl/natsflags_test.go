package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/cliflags"
)

// TestNATSFlagsAlike: every convctl command that talks to a worker shows
// every NATS connection flag of cliflags with its environment variable,
// and no other. The worker's TestNATSFlagsAlike checks it against the same
// list, so the two expose the same flags and variables.
func TestNATSFlagsAlike(t *testing.T) {
	for _, name := range []string{"send", "watch", "infer", "errors", "doctor"} {
		var out, errOut bytes.Buffer
		if code := dispatch(context.Background(), []string{name, "--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("convctl %s --help: exit %d", name, code)
		}
		if err := cliflags.CheckNATSHelp(out.String() + errOut.String()); err != nil {
			t.Errorf("convctl %s: %v", name, err)
		}
	}
}
