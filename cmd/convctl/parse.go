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

// runParse implements `convctl parse [--jsonl] [FILE]`.
func runParse(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonl := fs.Bool("jsonl", false, `read lines {"name","input"} and write lines {"name","output"} or {"name","error"}`)
	maxMessages := fs.Int("max-messages", conversation.DefaultMaxMessages, "refuse conversations with more messages (0: no limit)")
	maxLine := fs.Int("max-line-bytes", 256<<20, "longest input line accepted with --jsonl")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl parse [--jsonl] [FILE]")
		fmt.Fprintln(stderr, "Reads {\"messages\":[...],\"messageGroups\":[...]} or a bare array (stdin when no FILE)")
		fmt.Fprintln(stderr, "and prints {\"contextTree\",\"flatList\",\"messageMap\"} as JSON.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	in, closeIn, err := openInput(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "convctl parse: %v\n", err)
		return 1
	}
	defer closeIn()
	opts := []conversation.Option{conversation.WithMaxMessages(*maxMessages)}
	if *jsonl {
		return parseLines(in, stdout, stderr, *maxLine, opts)
	}
	msgs, groups, err := conversation.DecodeInput(in)
	if err != nil {
		fmt.Fprintf(stderr, "convctl parse: %v\n", err)
		return 1
	}
	res, err := conversation.Parse(msgs, groups, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "convctl parse: %v\n", err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "convctl parse: %v\n", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "convctl parse: %v\n", err)
		return 1
	}
	return 0
}

// parseLines handles --jsonl: one output line per input line, in order. A
// line that fails gets an error line; the run goes on.
func parseLines(in io.Reader, stdout, stderr io.Writer, maxLine int, opts []conversation.Option) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	failed := 0
	line := 0
	for sc.Scan() {
		line++
		var c struct {
			Name  json.RawMessage `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		out := map[string]any{}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			out["name"] = nil
			out["error"] = fmt.Sprintf("line %d: %v", line, err)
		} else {
			out["name"] = c.Name
			if c.Name == nil {
				out["name"] = nil
			}
			res, err := parseOne(c.Input, opts)
			if err != nil {
				out["error"] = err.Error()
			} else {
				out["output"] = res
			}
		}
		if _, bad := out["error"]; bad {
			failed++
		}
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "convctl parse: %v\n", err)
			return 1
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "convctl parse: line %d: %v\n", line+1, err)
		return 1
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "convctl parse: %d of %d lines failed\n", failed, line)
	}
	return 0
}

func parseOne(input json.RawMessage, opts []conversation.Option) (*conversation.Result, error) {
	if len(input) == 0 {
		return nil, fmt.Errorf("missing \"input\"")
	}
	msgs, groups, err := conversation.DecodeInputBytes(input)
	if err != nil {
		return nil, err
	}
	return conversation.Parse(msgs, groups, opts...)
}
