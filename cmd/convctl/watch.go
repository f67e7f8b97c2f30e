package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/convstream/convstream/streams"
)

// runWatch implements `convctl watch [flags] CONV`.
func runWatch(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	once := fs.Bool("once", false, "print the current snapshot and exit")
	count := fs.Int("count", 0, "exit after this many snapshots (0: run until interrupted)")
	flat := fs.Bool("flat", false, `print only {"version","flatList"}`)
	deltas := fs.Bool("deltas", false, "print the snapshot deltas as published instead of the flatList they lead to")
	resync := fs.Duration("resync", 2*time.Second, "on a missed delta, how long to wait for the stored snapshot to catch up")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl watch [flags] CONV")
		fmt.Fprintln(stderr, "Prints the stored snapshot of conversation CONV, one JSON line, then applies")
		fmt.Fprintln(stderr, "each snapshot delta and prints the current flatList")
		fmt.Fprintln(stderr, `({"conversationId","version","sequence","flatList"}), reloading the stored`)
		fmt.Fprintln(stderr, "snapshot when it misses one. --once prints the stored snapshot in full")
		fmt.Fprintln(stderr, "(with its contextTree); --deltas prints the deltas themselves.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "watch", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	conv := arg(pos, 0)
	if !streams.ValidConversationID(conv) {
		fmt.Fprintf(stderr, "convctl watch: conversation id %q must match [A-Za-z0-9_-]{1,128}\n", conv)
		return 2
	}
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl watch:", err)
		return 1
	}
	defer nc.Close()
	enc := json.NewEncoder(stdout)
	print := func(s *streams.Snapshot) {
		if *flat {
			_ = enc.Encode(map[string]any{"version": s.Version, "flatList": s.FlatList})
			return
		}
		_ = enc.Encode(s)
	}
	if *once {
		s, err := c.Snapshot(ctx, conv)
		if err != nil {
			fmt.Fprintln(stderr, "convctl watch:", explain(ctx, nc, nf.Prefix, conv, err))
			return 1
		}
		print(s)
		return 0
	}
	// Following waits for the first snapshot; say why none may come.
	if _, err := c.Snapshot(ctx, conv); err != nil {
		var na *notAppliedError
		switch err = explain(ctx, nc, nf.Prefix, conv, err); {
		case errors.As(err, &na):
			fmt.Fprintln(stderr, "convctl watch: waiting:", err)
		case errors.Is(err, streams.ErrUnknownConversation):
			// Nothing sent yet: the first snapshot is what to wait for.
		default:
			fmt.Fprintln(stderr, "convctl watch:", err)
			return 1
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	more := func() bool { n++; return *count <= 0 || n < *count }
	if *deltas {
		ds, err := c.Deltas(ctx, conv)
		if err != nil {
			fmt.Fprintln(stderr, "convctl watch:", explain(ctx, nc, nf.Prefix, conv, err))
			return 1
		}
		for d := range ds {
			_ = enc.Encode(d)
			if !more() {
				break
			}
		}
		return 0
	}
	views, err := c.Follow(ctx, conv, *resync)
	if err != nil {
		fmt.Fprintln(stderr, "convctl watch:", explain(ctx, nc, nf.Prefix, conv, err))
		return 1
	}
	for v := range views {
		if *flat {
			_ = enc.Encode(map[string]any{"version": v.Version, "flatList": v.FlatList})
		} else {
			_ = enc.Encode(v)
		}
		if !more() {
			break
		}
	}
	return 0
}
