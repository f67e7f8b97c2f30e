package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/loadgen"
	"github.com/convstream/convstream/streams"
)

// runLoad implements `convctl load [flags]`.
func runLoad(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	var cfg loadgen.Config
	fs.IntVar(&cfg.Conversations, "conversations", 1000, "conversations driven")
	fs.IntVar(&cfg.Events, "events", 20000, "appends per run, spread over the conversations in turn")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target events/s (0: flat out, then again at half the worker's peak)")
	fs.IntVar(&cfg.ContentBytes, "content-bytes", 256, "size of each message's content")
	fs.DurationVar(&cfg.Wait, "wait", time.Minute, "how long to wait for the last event to come back")
	fs.BoolVar(&cfg.Warmup, "warmup", false, "send the first event of every conversation, and wait for it, before measuring (steady state: no conversation is new)")
	raw := fs.Bool("raw", true, "also run raw JetStream publish+consume of the same payloads, side by side")
	half := fs.Bool("half", true, "with --rate 0: run again at half of the worker's peak throughput")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("quiet", false, "no progress bar")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl load [flags]")
		fmt.Fprintln(stderr, "Appends to new conversations through a running worker and measures sustained")
		fmt.Fprintln(stderr, "events/s and append-to-snapshot-delta latency; with --raw, the same payloads")
		fmt.Fprintln(stderr, "through a plain JetStream stream and consumer (the physical limit).")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "load", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 0 || cfg.Conversations <= 0 || cfg.Events <= 0 || cfg.Rate < 0 || cfg.ContentBytes < 0 {
		fs.Usage()
		return 2
	}
	subjects, err := streams.NewSubjects(nf.prefix)
	if err != nil {
		fmt.Fprintln(stderr, "convctl load:", err)
		return 2
	}
	connect := func(name string) (*nats.Conn, error) {
		c := nf.conn
		c.Name = name
		return streams.Connect(c, nats.Timeout(nf.timeout), nats.MaxReconnects(0))
	}
	pub, err := connect("convctl-load-pub")
	if err != nil {
		fmt.Fprintln(stderr, "convctl load:", err)
		return 1
	}
	defer pub.Close()
	sub, err := connect("convctl-load-sub")
	if err != nil {
		fmt.Fprintln(stderr, "convctl load:", err)
		return 1
	}
	defer sub.Close()

	stamp := strconv.FormatInt(time.Now().Unix(), 36)
	n := 0
	phase := func(name string, c loadgen.Config, fn func(run string, c loadgen.Config) (loadgen.Result, error)) (loadgen.Result, error) {
		n++
		run := fmt.Sprintf("load%s-%d", stamp, n)
		if !*quiet {
			c.Progress = progressBar(stderr, name)
		}
		res, err := fn(run, c)
		if !*quiet {
			fmt.Fprintln(stderr)
		}
		return res, err
	}
	rawRun := func(run string, c loadgen.Config) (loadgen.Result, error) { return loadgen.Raw(ctx, pub, run, c) }
	workerRun := func(run string, c loadgen.Config) (loadgen.Result, error) {
		return loadgen.Worker(ctx, pub, sub, subjects, run, c)
	}

	var results []loadgen.Result
	var failed error
	add := func(r loadgen.Result, err error) bool {
		results = append(results, r)
		if err != nil {
			failed = errors.Join(failed, fmt.Errorf("%s: %w", r.Name, err))
			return !errors.Is(err, loadgen.ErrIncomplete)
		}
		return true
	}
	label := func(rate float64) string {
		if rate == 0 {
			return "flat out"
		}
		return fmt.Sprintf("%.0f ev/s", rate)
	}
	if *raw {
		r, err := phase("raw "+label(cfg.Rate), cfg, rawRun)
		if !add(r, err) {
			return report(stdout, stderr, cfg, results, failed, *asJSON)
		}
	}
	peak, err := phase("worker "+label(cfg.Rate), cfg, workerRun)
	if !add(peak, err) {
		return report(stdout, stderr, cfg, results, failed, *asJSON)
	}
	if cfg.Rate == 0 && *half && peak.Throughput > 0 {
		h := cfg
		h.Rate = peak.Throughput / 2
		if *raw {
			r, err := phase("raw "+label(h.Rate), h, rawRun)
			if !add(r, err) {
				return report(stdout, stderr, cfg, results, failed, *asJSON)
			}
		}
		r, err := phase("worker "+label(h.Rate), h, workerRun)
		add(r, err)
	}
	return report(stdout, stderr, cfg, results, failed, *asJSON)
}

// progressBar returns a Progress callback drawing one line on w.
func progressBar(w io.Writer, name string) func(loadgen.Progress) {
	return func(p loadgen.Progress) {
		const width = 30
		done := p.Received * width / max(1, p.Events)
		bar := strings.Repeat("=", done) + strings.Repeat(" ", width-done)
		rate := float64(p.Received) / max(p.Elapsed.Seconds(), 1e-9)
		fmt.Fprintf(w, "\r%-22s [%s] %3d%% sent %d back %d %8.0f ev/s ", name, bar,
			p.Received*100/max(1, p.Events), p.Published, p.Received, rate)
	}
}

// report prints the summary and returns the exit status.
func report(stdout, stderr io.Writer, cfg loadgen.Config, results []loadgen.Result, failed error, asJSON bool) int {
	machine := machineNote()
	if asJSON {
		_ = json.NewEncoder(stdout).Encode(map[string]any{"machine": machine, "conversations": cfg.Conversations,
			"events": cfg.Events, "warmup": cfg.Warmup, "contentBytes": cfg.ContentBytes, "results": results})
	} else {
		fmt.Fprintf(stdout, "machine: %s\n", machine)
		warm := ""
		if cfg.Warmup {
			warm = fmt.Sprintf(" (the first %d sent before measuring)", min(cfg.Conversations, cfg.Events))
		}
		fmt.Fprintf(stdout, "load: %d conversations, %d appends per run%s, %d-byte contents\n\n", cfg.Conversations, cfg.Events, warm, cfg.ContentBytes)
		fmt.Fprintf(stdout, "%-14s %12s %14s %14s %9s %9s %9s %9s\n", "run", "target ev/s", "published ev/s", "sustained ev/s", "p50", "p90", "p99", "max")
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
		var rawPeak, workerPeak float64
		for _, r := range results {
			target := "flat out"
			if r.Rate > 0 {
				target = fmt.Sprintf("%.0f", r.Rate)
			}
			note := ""
			if r.Received < r.Events {
				note = fmt.Sprintf("  (%d of %d back)", r.Received, r.Events)
			}
			fmt.Fprintf(stdout, "%-14s %12s %14.0f %14.0f %9s %9s %9s %9s%s\n", r.Name, target, r.PublishRate, r.Throughput,
				ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), note)
			if r.Rate == 0 && strings.HasPrefix(r.Name, "raw") {
				rawPeak = r.Throughput
			} else if r.Rate == 0 {
				workerPeak = r.Throughput
			}
		}
		if rawPeak > 0 && workerPeak > 0 {
			fmt.Fprintf(stdout, "\nworker peak = %.0f%% of raw JetStream peak\n", 100*workerPeak/rawPeak)
		}
	}
	if failed != nil {
		fmt.Fprintln(stderr, "convctl load:", failed)
		return 1
	}
	return 0
}

// machineNote describes where the figures come from.
func machineNote() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v) + ", "
				break
			}
		}
	}
	return fmt.Sprintf("%s%s/%s, %d CPUs (GOMAXPROCS %d), %s", model, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
}
