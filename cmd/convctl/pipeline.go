package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	_ "time/tzdata" // time zones for SystemDateProvider wherever convctl runs

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
)

// buildRequest writes msgs, the pipeline's output for input, in the
// format, profile and budget the flags ask for.
func buildRequest(msgs, input []enginecore.Message, ff formatFlags) (*providers.Request, error) {
	f, err := providers.ParseFormat(ff.format)
	if err != nil {
		return nil, err
	}
	opts := []providers.Option{providers.WithInput(input), providers.WithProfile(ff.profile)}
	if c := ff.cacheBreakpoints(); c != nil {
		opts = append(opts, providers.WithCacheBreakpoints(*c))
	}
	if b := ff.budget(); b != nil {
		budget := providers.Budget{MaxTokens: b.MaxTokens, Reserve: b.Reserve, KeepTurns: b.KeepTurns}
		if b.Encoding != "" {
			c, err := bpe.New(b.Encoding)
			if err != nil {
				return nil, err
			}
			budget.Counter = c
		}
		opts = append(opts, providers.WithBudget(budget))
		if b.Reserve > 0 {
			opts = append(opts, providers.WithMaxTokens(b.Reserve))
		}
	}
	return providers.Build(msgs, f, opts...)
}

// runPipeline implements `convctl pipeline [--spec FILE] [FILE]`.
func runPipeline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return pipelineCommand(ctx, processors.Default(), args, stdin, stdout, stderr)
}

// pipelineCommand runs the command with the processors of reg.
func pipelineCommand(ctx context.Context, reg *processors.Registry, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pipeline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("spec", "", "pipeline spec, YAML or JSON (default: the built-in default spec)")
	maxMessages := fs.Int("max-messages", conversation.DefaultMaxMessages, "refuse conversations with more messages (0: no limit)")
	var ff formatFlags
	ff.register(fs, "raw", "(default raw: the pipeline's output)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl pipeline [--spec FILE] [FILE]")
		fmt.Fprintln(stderr, "Reads {\"messages\":[...],\"messageGroups\":[...]} or a bare array (stdin when no FILE),")
		fmt.Fprintln(stderr, "runs the context pipeline over the conversation's flat list and prints")
		fmt.Fprintln(stderr, "{\"messages\",\"metadata\",\"isAborted\",\"stats\"} as JSON; with --format other than raw,")
		fmt.Fprintln(stderr, "also \"format\" and \"request\" (the provider's request body). A failing processor is")
		fmt.Fprintln(stderr, "reported as JSON on stderr with exit status 2.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}

	spec := processors.DefaultSpec()
	if *specPath != "" {
		s, err := processors.LoadSpec(*specPath)
		if err != nil {
			fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
			return 1
		}
		spec = s
	}
	engine, err := reg.Build(spec)
	if err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: spec %q: %v\n", spec.Name, err)
		return 1
	}

	in, closeIn, err := openInput(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
		return 1
	}
	defer closeIn()
	msgs, groups, err := conversation.DecodeInput(in)
	if err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
		return 1
	}
	parsed, err := conversation.Parse(msgs, groups, conversation.WithMaxMessages(*maxMessages))
	if err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
		return 1
	}
	flat := make([]enginecore.Message, len(parsed.FlatList))
	for i, m := range parsed.FlatList {
		flat[i] = m.Fields()
	}

	res, err := engine.Process(ctx, flat)
	var pe *enginecore.PipelineError
	if errors.As(err, &pe) {
		b, _ := json.Marshal(pe)
		fmt.Fprintf(stderr, "%s\n", b)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
		return 1
	}

	var out any = res
	if ff.format != string(providers.FormatRaw) || ff.budget() != nil || ff.cacheBreakpoints() != nil {
		built, err := buildRequest(res.Messages, flat, ff)
		if err != nil {
			fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
			return 1
		}
		out = struct {
			*providers.Request
			Metadata  map[string]any   `json:"metadata"`
			IsAborted bool             `json:"isAborted"`
			Stats     enginecore.Stats `json:"stats"`
		}{built, res.Metadata, res.IsAborted, res.Stats}
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "convctl pipeline: %v\n", err)
		return 1
	}
	return 0
}
