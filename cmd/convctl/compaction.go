package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/convstream/convstream/streams/worker"
)

// compactionStatus is what convctl compaction prints.
type compactionStatus struct {
	Stream string `json:"stream"`
	worker.EventCompaction
	// PurgesFrom is when workers with compaction on begin to purge (absent
	// when off, or on since the stream was made).
	PurgesFrom time.Time `json:"purgesFrom,omitzero"`
}

// runCompaction implements `convctl compaction [--enable]`.
func runCompaction(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compaction", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	enable := fs.Bool("enable", false, "turn compaction on for an events stream a release without it made; only once every worker runs a release with compaction")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl compaction [--enable]")
		fmt.Fprintln(stderr, "Prints whether workers may compact the events stream (purge the events a checkpoint")
		fmt.Fprintln(stderr, "covers), as JSON. A stream a worker with compaction made says so from the start; one an")
		fmt.Fprintln(stderr, "earlier release made is not compacted until --enable turns it on, which workers")
		fmt.Fprintln(stderr, "read within a minute and act on from purgesFrom. Run it once every worker runs a")
		fmt.Fprintln(stderr, "release with compaction: an earlier release's worker would rebuild conversations")
		fmt.Fprintln(stderr, "without the events purged. It cannot be turned off (docs/operations.md, \"Event")
		fmt.Fprintln(stderr, "compaction\"). The NATS user needs the worker role's rights to the events stream.")
		fmt.Fprintln(stderr, "Exit status: 0 done, 1 failed, 2 bad usage.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "compaction", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl compaction:", err)
		return 1
	}
	defer nc.Close()
	js, subjects := c.JetStream(), c.Subjects()
	rctx, cancel := context.WithTimeout(ctx, nf.timeout)
	defer cancel()
	read := worker.ReadEventCompaction
	if *enable {
		read = worker.EnableEventCompaction
	}
	mark, err := read(rctx, js, subjects)
	if err != nil {
		fmt.Fprintln(stderr, "convctl compaction:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(compactionStatus{Stream: subjects.EventsStream(), EventCompaction: mark, PurgesFrom: mark.PurgesFrom()}); err != nil {
		fmt.Fprintln(stderr, "convctl compaction:", err)
		return 1
	}
	return 0
}
