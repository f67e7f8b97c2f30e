// Command convload drives many conversations through a running worker and
// measures sustained events/s and append-to-snapshot-delta latency, side by
// side with raw JetStream publish+consume of the same payloads (the
// physical limit). It is the lab's load generator (bench/loadgen) on the
// command line; bench/Makefile's load and load-compare targets run it
// against a worker they start.
//
//	go run ./cmd/worker &                       # from the repository root
//	cd bench && go run ./cmd/convload --quiet --warmup --rounds 3
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
