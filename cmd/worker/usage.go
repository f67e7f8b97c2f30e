package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/convstream/convstream/internal/cliflags"
)

// topic is a group of flags in the worker's -help.
type topic struct {
	title string
	flags []string
}

// flagTopics groups the worker's flags in its -help, in this order. A flag
// in no topic is listed under "Other", so a new flag is never hidden.
var flagTopics = []topic{
	{"NATS connection", append(natsFlagNames(), "consumer")},
	{"Embedded server (without --nats-url)", []string{"listen", "data-dir", "max-payload", "websocket", "websocket-origins",
		"embedded-config", "embedded-user", "embedded-password", "embedded-token", "embedded-tenants"}},
	{"Storage (streams and buckets)", []string{"stream-replicas", "bucket-replicas", "stream-max-bytes", "stream-max-age",
		"duplicate-window", "placement-cluster", "placement-tags", "partitions", "pinned-ttl", "ack-wait", "max-deliver", "reconcile",
		"snapshot-interval", "snapshot-max-interval", "heads-confirmed-from", "store-stall-limit", "checkpoints", "compact-events",
		"errors-max-age", "errors-max-bytes", "errors-max-per-conversation"}},
	{"Conversation limits", []string{"max-event-bytes", "max-messages", "max-snapshot-bytes", "max-branch-depth"}},
	{"Inference", []string{"pipelines-dir", "inference-timeout", "inference-wait", "inference-workers", "inference-queue", "inference-queue-wait", "inference-max-expansion-bytes", "inference-max-expansion-depth"}},
	{"Caching", []string{"cache-conversations", "cache-bytes", "cache-idle", "cache-ttl", "loads"}},
	{"Processing", []string{"lanes", "shutdown-timeout", "reply-idle-timeout", "erase-timeout"}},
	{"Telemetry, health and logs (OTEL_* variables configure OTLP export)", []string{"http", "metrics", "metrics-scope-labels", "pprof", "log-level", "log-format"}},
}

// tuningTopic is listed last, after "Other": the Go runtime's settings,
// apart from the user's; docs/operations.md, "Tuning", gives the figures
// behind each default and the tests that guard each.
var tuningTopic = topic{
	`Runtime tuning (Go runtime; docs/operations.md "Tuning")`,
	[]string{"gc-percent", "memory-limit-ratio", "idle-gc", "heap-huge-pages"},
}

// natsFlagNames are the names of the shared NATS connection flags.
func natsFlagNames() []string {
	var names []string
	for _, f := range cliflags.NATSFlags() {
		names = append(names, f.Name)
	}
	return names
}

// printUsage writes the worker's help: its flags by topic, each with its
// environment variable and its default once, in the units it is written
// in (TestWorkerHelpGrouped).
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: worker [flags]")
	fmt.Fprintln(w, "Runs convstream. Flags override environment variables; OTEL_* variables configure telemetry.")
	listed := map[string]bool{}
	lookup := func(t topic) []*flag.Flag {
		var fl []*flag.Flag
		for _, name := range t.flags {
			if f := fs.Lookup(name); f != nil {
				fl = append(fl, f)
				listed[name] = true
			}
		}
		return fl
	}
	for _, t := range flagTopics {
		printTopic(w, t.title, lookup(t))
	}
	tuning := lookup(tuningTopic)
	var other []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			other = append(other, f)
		}
	})
	printTopic(w, "Other", other)
	printTopic(w, tuningTopic.title, tuning)
}

func printTopic(w io.Writer, title string, fl []*flag.Flag) {
	if len(fl) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, f := range fl {
		typ, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*byteSize); ok {
			typ = "size"
		}
		line := "  -" + f.Name
		if typ != "" {
			line += " " + typ
		}
		if def := defaultText(f, usage); def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
	}
}

// defaultText is the default to show after a flag's usage: none when the
// usage already says it or it is the zero value; a size in its unit.
func defaultText(f *flag.Flag, usage string) string {
	if strings.Contains(usage, "default") {
		return ""
	}
	if b, ok := f.Value.(*byteSize); ok {
		// The flag's current value is its default: help is printed
		// before the environment is applied (cliflags.Env.Parse).
		return formatSize(int64(*b))
	}
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	return f.DefValue
}

// formatSize writes n bytes in the largest binary unit that divides it.
func formatSize(n int64) string {
	if n == 0 {
		return ""
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprint(n)
}
