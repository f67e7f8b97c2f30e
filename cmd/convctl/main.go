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

	// Root certificates for TLS to NATS where the system has none, as in
	// the image make image builds (FROM scratch): used only then.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/convstream/convstream/internal/buildinfo"
)

// command is one convctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists every subcommand by name.
func commands() map[string]command {
	return map[string]command{
		"parse":      {summary: "parse a conversation and print contextTree, flatList and messageMap as JSON", run: runParse},
		"pipeline":   {summary: "run the context pipeline over a conversation and print model-ready messages and stats as JSON", run: runPipeline},
		"send":       {summary: "publish message events (append, update, delete, groups) to a conversation over NATS", run: runSend},
		"watch":      {summary: "print a conversation's snapshot each time it changes", run: runWatch},
		"chat":       {summary: "send a user's message, ask for the reply and print it as it is written", run: runChat},
		"infer":      {summary: "ask the worker for a conversation's model-ready context", run: runInfer},
		"errors":     {summary: "print the rejections, pipeline failures and dead letters stored for a conversation", run: runErrors},
		"export":     {summary: "print a stored conversation as a document (messages in append order, groups) that import and parse read; --all DIR: every one", run: runExport},
		"import":     {summary: "send a document export wrote to a conversation, possibly another id or --subject-prefix", run: runImport},
		"erase":      {summary: "erase a stored conversation everywhere (events, snapshot, checkpoint, errors, replies; on disk) and print the receipt", run: runErase},
		"compaction": {summary: "print whether workers compact the events stream; --enable: turn it on for a stream an earlier release made", run: runCompaction},
		"doctor":     {summary: "find messages of a conversation a user cannot see, print the findings and proposed repairs as JSON (--fix: the repaired messages)", run: runDoctor},

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
	if len(args) == 0 {
		usage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout, cmds)
		return 0
	case "help":
		// convctl help COMMAND is COMMAND --help.
		if len(args) > 1 {
			if _, ok := cmds[args[1]]; ok {
				return dispatch(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
			}
		}
		usage(stdout, cmds)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "convctl", buildinfo.Read())
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "convctl: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	code := cmd.run(ctx, args[1:], stdin, stdout, stderr)
	// A command's flag set prints its usage on -h, -help or --help and
	// fails with flag.ErrHelp, which every command turns into 2, the code
	// of a usage error; asking for help is not one.
	if code == 2 && asksHelp(args[1:]) {
		return 0
	}
	return code
}

// asksHelp reports whether a command's arguments ask for its help: -h,
// -help or --help before a "--" that ends the flags.
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: convctl <command> [flags] [args]")
	fmt.Fprintln(w, "       convctl help <command> | --version")
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
