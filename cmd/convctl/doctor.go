package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// Exit codes of `convctl doctor`.
const (
	doctorHealthy  = 0 // nothing found
	doctorBadInput = 1 // the input could not be read or parsed
	doctorFindings = 3 // the conversation has findings (also with --fix)
)

// runDoctor implements `convctl doctor [--fix] [FILE]`.
func runDoctor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	remote := fs.String("conversation", "", "ask the worker to diagnose this stored conversation instead of reading a file")
	fix := fs.Bool("fix", false, "print the messages document with the repairs applied instead of the report")
	maxMessages := fs.Int("max-messages", conversation.DefaultMaxMessages, "refuse conversations with more messages (0: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl doctor [--fix] [FILE] | convctl doctor --conversation CONV")
		fmt.Fprintln(stderr, "Reads {\"messages\":[...],\"messageGroups\":[...]} or a bare array (stdin when no FILE),")
		fmt.Fprintln(stderr, "finds messages a user cannot see and prints {\"hiddenCount\",\"findings\"} as JSON;")
		fmt.Fprintln(stderr, "with --fix, prints {\"messages\",\"messageGroups\"} with the proposed repairs applied.")
		fmt.Fprintln(stderr, "--conversation asks a worker (P.doctor.CONV) about a stored conversation instead.")
		fmt.Fprintln(stderr, "Exit status: 0 healthy, 1 bad input, 2 bad usage, 3 findings (with or without --fix).")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "doctor", stderr)
	if !ok {
		return 2
	}
	if len(pos) > 1 || *remote != "" && (len(pos) > 0 || *fix) {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "convctl doctor: %v\n", err)
		return doctorBadInput
	}
	if *remote != "" {
		return doctorRemote(ctx, &nf, *remote, stdout, stderr)
	}
	in, closeIn, err := openInput(arg(pos, 0), stdin)
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

// doctorRemote asks a worker for the diagnosis of stored conversation
// conv and prints it as the file form does.
func doctorRemote(ctx context.Context, nf *natsFlags, conv string, stdout, stderr io.Writer) int {
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl doctor:", err)
		return doctorBadInput
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, nf.timeout)
	defer cancel()
	ev, err := c.Doctor(rctx, conv)
	if err != nil {
		fmt.Fprintln(stderr, "convctl doctor:", err)
		return doctorBadInput
	}
	if ev.Type() != streams.TypeDoctorDiagnosis {
		fmt.Fprintf(stderr, "convctl doctor: %s: %s\n", ev.Type(), ev.Data())
		return doctorBadInput
	}
	var got streams.DoctorDiagnosis
	if err := json.Unmarshal(ev.Data(), &got); err != nil || got.Diagnosis == nil {
		fmt.Fprintf(stderr, "convctl doctor: reply: %v\n", err)
		return doctorBadInput
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got.Diagnosis); err != nil {
		fmt.Fprintln(stderr, "convctl doctor:", err)
		return doctorBadInput
	}
	if got.Diagnosis.Healthy() {
		return doctorHealthy
	}
	return doctorFindings
}
