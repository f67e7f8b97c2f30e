package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/convstream/convstream/conversation"
)

// Exit codes of `convctl doctor`.
const (
	doctorHealthy  = 0 // nothing found
	doctorBadInput = 1 // the input could not be read or parsed
	doctorFindings = 3 // the conversation has findings (also with --fix)
)

// runDoctor implements `convctl doctor [--fix] [FILE]`.
func runDoctor(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fix := fs.Bool("fix", false, "print the messages document with the repairs applied instead of the report")
	maxMessages := fs.Int("max-messages", conversation.DefaultMaxMessages, "refuse conversations with more messages (0: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl doctor [--fix] [FILE]")
		fmt.Fprintln(stderr, "Reads {\"messages\":[...],\"messageGroups\":[...]} or a bare array (stdin when no FILE),")
		fmt.Fprintln(stderr, "finds messages a user cannot see and prints {\"hiddenCount\",\"findings\"} as JSON;")
		fmt.Fprintln(stderr, "with --fix, prints {\"messages\",\"messageGroups\"} with the proposed repairs applied.")
		fmt.Fprintln(stderr, "Exit status: 0 healthy, 1 bad input, 2 bad usage, 3 findings (with or without --fix).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "convctl doctor: %v\n", err)
		return doctorBadInput
	}
	in, closeIn, err := openInput(fs.Arg(0), stdin)
	if err != nil {
		return fail(err)
	}
	defer closeIn()
	msgs, groups, err := conversation.DecodeInput(in)
	if err != nil {
		return fail(err)
	}
	d, err := conversation.Diagnose(msgs, groups, conversation.WithMaxMessages(*maxMessages))
	if err != nil {
		return fail(err)
	}
	var out any = d
	if *fix {
		fixed, err := conversation.ApplyRepairs(msgs, d.Repairs())
		if err != nil {
			return fail(err)
		}
		if groups == nil {
			groups = []*conversation.MessageGroup{}
		}
		out = map[string]any{"messages": fixed, "messageGroups": groups}
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if d.Healthy() {
		return doctorHealthy
	}
	return doctorFindings
}
