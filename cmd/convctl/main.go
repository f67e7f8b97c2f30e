// Command convctl is the convstream command-line tool: it parses conversations,
// runs context pipelines and talks to a running worker over NATS.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one convctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists every subcommand by name.
func commands() map[string]command {
	return map[string]command{
		"parse":    {summary: "parse a conversation and print contextTree, flatList and messageMap as JSON", run: runParse},
		"pipeline": {summary: "run the context pipeline over a conversation and print model-ready messages and stats as JSON", run: runPipeline},
		"send":     {summary: "publish message events (append, update, delete, groups) to a conversation over NATS", run: runSend},
		"watch":    {summary: "print a conversation's snapshot each time it changes", run: runWatch},
		"infer":    {summary: "ask the worker for a conversation's model-ready context", run: runInfer},
		"errors":   {summary: "print the rejections, pipeline failures and dead letters stored for a conversation", run: runErrors},
		"load":     {summary: "drive many conversations through a worker and measure events/s and snapshot latency against raw JetStream", run: runLoad},
		"doctor":   {summary: "find messages of a conversation a user cannot see, print the findings and proposed repairs as JSON (--fix: the repaired messages)", run: runDoctor},

		"permissions": {summary: "print the NATS permissions of a role (worker, ui, orchestrator) of a subject prefix, or a tenants file's accounts, as nats-server configuration", run: runPermissions},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "convctl: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	return cmd.run(ctx, args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: convctl <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
}
