package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl watch [flags] CONV")
		fmt.Fprintln(stderr, "Prints the snapshot of conversation CONV, one JSON line, each time it changes,")
		fmt.Fprintln(stderr, "starting from the stored one. Fast changes may arrive as their latest.")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if err := nf.applyEnv(); err != nil {
		fmt.Fprintln(stderr, "convctl watch:", err)
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
			fmt.Fprintln(stderr, "convctl watch:", err)
			return 1
		}
		print(s)
		return 0
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	snaps, err := c.Watch(ctx, conv)
	if err != nil {
		fmt.Fprintln(stderr, "convctl watch:", err)
		return 1
	}
	n := 0
	for s := range snaps {
		print(s)
		if n++; *count > 0 && n >= *count {
			break
		}
	}
	return 0
}
