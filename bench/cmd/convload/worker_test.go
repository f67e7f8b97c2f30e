package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/convstream/convstream/internal/workertest"
)

// startWorker starts an embedded JetStream server and a worker on it with
// the built-in pipelines (workertest.Start), and points CONVSTREAM_NATS_URL
// at the server.
func startWorker(t *testing.T) {
	t.Helper()
	t.Setenv("CONVSTREAM_NATS_URL", workertest.Start(t).URL)
}

// convload runs convload with args and returns its status, stdout and
// stderr.
func convload(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}
