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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/bench/loadgen"
	"github.com/convstream/convstream/internal/hugepages"
	"github.com/convstream/convstream/streams"
)

// run implements `convload [flags]`; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	var cfg loadgen.Config
	fs.IntVar(&cfg.Conversations, "conversations", 1000, "conversations driven")
	fs.IntVar(&cfg.Events, "events", 20000, "appends per run, spread over the conversations in turn")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target events/s (0: flat out, then again at half the worker's peak)")
	fs.IntVar(&cfg.ContentBytes, "content-bytes", 256, "size of each message's content")
	fs.DurationVar(&cfg.Wait, "wait", time.Minute, "how long to wait for the last event to come back")
	fs.DurationVar(&cfg.Window, "timeline", 0, "also report each run's p99 by window of publishing of this length, e.g. 200ms (0: off): shows whether a tail is spread over the run or bunched in pauses")
	fs.BoolVar(&cfg.Warmup, "warmup", false, "send the first event of every conversation, and wait for it, before measuring (steady state: no conversation is new)")
	raw := fs.Bool("raw", true, "also run raw JetStream publish+consume of the same payloads, side by side")
	half := fs.Bool("half", true, "with --rate 0: run again at half of the worker's peak throughput")
	halfRate := fs.Float64("half-rate", 0, "with --rate 0 and --half: run again at this many events/s instead of half the peak, so that two builds with different peaks are compared at one load (0: half the peak)")
	rounds := fs.Int("rounds", 1, "run every phase this many times, raw and worker alternately, and report each round and the medians (the worker's peak for the half-peak rate is the median)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("quiet", false, "no progress bar")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load generator itself to this file (what measuring costs the machine)")
	procs := fs.Int("procs", 1, "Ps (GOMAXPROCS) the load generator runs on (GOMAXPROCS in the environment wins; 0: one per CPU): one paces and times the events, and more take CPU from a worker on the same machine")
	workerPprof := fs.String("worker-pprof", "", "the worker's pprof endpoint (its --pprof), e.g. http://127.0.0.1:6060: after the runs, count the worker process's garbage collections that ended in each (same machine only: the clocks are compared)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convload [flags]")
		fmt.Fprintln(stderr, "Appends to new conversations through a running worker and measures sustained")
		fmt.Fprintln(stderr, "events/s and append-to-snapshot-delta latency; with --raw, the same payloads")
		fmt.Fprintln(stderr, "through a plain JetStream stream and consumer (the physical limit).")
		fs.PrintDefaults()
	}
	pos, err := nf.parse(fs, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(pos) != 0 || cfg.Conversations <= 0 || cfg.Events <= 0 || cfg.Rate < 0 || cfg.ContentBytes < 0 || *rounds < 1 || cfg.Window < 0 || *halfRate < 0 || *procs < 0 {
		fs.Usage()
		return 2
	}
	subjects, err := streams.NewSubjects(nf.Prefix)
	if err != nil {
		fmt.Fprintln(stderr, "convload:", err)
		return 2
	}
	// The generator mostly sleeps between events and wakes for their
	// acknowledgements and deltas. With a second P idle, each goroutine it
	// readies wakes a thread to look for work (futex calls, the scheduler's
	// search), on the cores the worker under test needs (EXPERIMENTS.md,
	// "the load generator on one P").
	if *procs > 0 && os.Getenv("GOMAXPROCS") == "" {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*procs))
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "convload:", err)
			return 1
		}
		defer stop()
	}
	connect := func(name string) (*nats.Conn, error) {
		c := nf.Conn
		c.Name = name
		return streams.Connect(c, nats.Timeout(nf.timeout), nats.MaxReconnects(0))
	}
	pub, err := connect("convload-pub")
	if err != nil {
		fmt.Fprintln(stderr, "convload:", err)
		return 1
	}
	defer pub.Close()
	sub, err := connect("convload-sub")
	if err != nil {
		fmt.Fprintln(stderr, "convload:", err)
		return 1
	}
	defer sub.Close()

	// Runs name their conversations (and their events' ids, which the
	// stream deduplicates) after this invocation: seconds were not enough,
	// two invocations within one collided and the second saw nothing back.
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
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

	var results []roundResult
	var failed error
	round := 0
	add := func(r loadgen.Result, err error) bool {
		results = append(results, roundResult{Round: round, Result: r})
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
	done := func() int {
		if *workerPprof != "" {
			countCollections(ctx, *workerPprof, results, stderr)
		}
		return report(stdout, stderr, cfg, *rounds, *halfRate, results, failed, *asJSON)
	}
	// Each phase runs raw and worker back to back, round after round, so
	// that a slower or faster spell of a shared machine falls on both.
	runPhase := func(c loadgen.Config) bool {
		for round = 1; round <= *rounds; round++ {
			tag := ""
			if *rounds > 1 {
				tag = fmt.Sprintf(" #%d", round)
			}
			if *raw {
				r, err := phase("raw "+label(c.Rate)+tag, c, rawRun)
				if !add(r, err) {
					return false
				}
			}
			r, err := phase("worker "+label(c.Rate)+tag, c, workerRun)
			if !add(r, err) {
				return false
			}
		}
		return true
	}
	if !runPhase(cfg) {
		return done()
	}
	if cfg.Rate == 0 && *half {
		if peak := median(throughputs(results, "worker", 0)); peak > 0 {
			h := cfg
			h.Rate = peak / 2
			if *halfRate > 0 {
				h.Rate = *halfRate
			}
			runPhase(h)
		}
	}
	return done()
}

// roundResult is one run of a phase.
type roundResult struct {
	Round int
	loadgen.Result
	// Collections is how many garbage collections of the worker process
	// ended during the run (--worker-pprof); nil: not known.
	Collections *int `json:",omitempty"`
}

// countCollections sets each run's Collections from the worker process's
// recent collections, read from its pprof endpoint at base. Raw runs count
// too: the embedded server they use is in that process. Failing, it says
// so and leaves the counts unknown.
func countCollections(ctx context.Context, base string, results []roundResult, stderr io.Writer) {
	ends, err := collectionEnds(ctx, base)
	if err != nil {
		fmt.Fprintln(stderr, "convload: --worker-pprof:", err)
		return
	}
	for i := range results {
		r := &results[i]
		if r.Start.IsZero() {
			continue
		}
		n := countWithin(ends, r.Start, r.Start.Add(r.Elapsed))
		r.Collections = &n
	}
}

// label names the run in the report: with its round when there are several.
func (r roundResult) label(rounds int) string {
	if rounds > 1 {
		return fmt.Sprintf("%s (%d)", r.Name, r.Round)
	}
	return r.Name
}

// throughputs returns the sustained ev/s of the runs of one kind ("raw" or
// "worker") at target rate.
func throughputs(results []roundResult, kind string, rate float64) []float64 {
	var out []float64
	for _, r := range results {
		if strings.HasPrefix(r.Name, kind) && r.Rate == rate && r.Received > 0 {
			out = append(out, r.Throughput)
		}
	}
	return out
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
func report(stdout, stderr io.Writer, cfg loadgen.Config, rounds int, halfRate float64, results []roundResult, failed error, asJSON bool) int {
	machine := machineNote()
	sum := summarize(results)
	if asJSON {
		out := map[string]any{"machine": machine, "conversations": cfg.Conversations,
			"events": cfg.Events, "warmup": cfg.Warmup, "contentBytes": cfg.ContentBytes, "rounds": rounds, "results": results}
		if sum.ratios != nil {
			out["peakRatios"], out["medianPeakRatio"] = sum.ratios, median(sum.ratios)
		}
		_ = json.NewEncoder(stdout).Encode(out)
	} else {
		fmt.Fprintf(stdout, "machine: %s\n", machine)
		warm := ""
		if cfg.Warmup {
			warm = fmt.Sprintf(" (the first %d sent before measuring)", min(cfg.Conversations, cfg.Events))
		}
		fmt.Fprintf(stdout, "load: %d conversations, %d appends per run%s, %d-byte contents\n\n", cfg.Conversations, cfg.Events, warm, cfg.ContentBytes)
		name := "run"
		if rounds > 1 {
			name = "run (round)"
		}
		gcs, known := "", slices.ContainsFunc(results, func(r roundResult) bool { return r.Collections != nil })
		if known {
			gcs = fmt.Sprintf(" %11s", "worker gcs")
		}
		fmt.Fprintf(stdout, "%-18s %12s %14s %14s %9s %9s %9s %9s %9s %9s%s\n", name, "target ev/s", "published ev/s", "sustained ev/s", "p50", "p90", "p99", "max", "cpu busy", "gen cores", gcs)
		for _, r := range results {
			target := "flat out"
			if r.Rate > 0 {
				target = fmt.Sprintf("%.0f", r.Rate)
			}
			note := ""
			if r.Received < r.Events {
				note = fmt.Sprintf("  (%d of %d back)", r.Received, r.Events)
			}
			gcs := ""
			switch {
			case r.Collections != nil:
				gcs = fmt.Sprintf(" %11d", *r.Collections)
			case known:
				gcs = fmt.Sprintf(" %11s", "-")
			}
			fmt.Fprintf(stdout, "%-18s %12s %14.0f %14.0f %9s %9s %9s %9s %9s %9s%s%s\n", r.label(rounds), target, r.PublishRate, r.Throughput,
				ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), percent(r.CPUBusy), cores(r.GeneratorCPU), gcs, note)
		}
		switch {
		case len(sum.ratios) == 1:
			fmt.Fprintf(stdout, "\nworker peak = %.0f%% of raw JetStream peak\n", 100*sum.ratios[0])
		case len(sum.ratios) > 1:
			fmt.Fprintf(stdout, "\nworker peak / raw JetStream peak by round: %s (median %.0f%%)\n", percents(sum.ratios), 100*median(sum.ratios))
		}
		if len(sum.halfP99) > 1 {
			at := fmt.Sprintf("half of peak (%.0f ev/s)", sum.halfRate)
			switch {
			case cfg.Rate > 0:
				at = fmt.Sprintf("%.0f ev/s", cfg.Rate)
			case halfRate > 0:
				at = fmt.Sprintf("%.0f ev/s (--half-rate)", halfRate)
			}
			fmt.Fprintf(stdout, "worker p99 at %s by round: %s (median %s)\n", at, durations(sum.halfP99), ms(median(sum.halfP99)))
			if len(sum.rawHalfP99) == len(sum.halfP99) {
				fmt.Fprintf(stdout, "raw JetStream p99 at that rate by round: %s (median %s)\n", durations(sum.rawHalfP99), ms(median(sum.rawHalfP99)))
			}
			if len(sum.collections) == len(sum.halfP99) {
				fmt.Fprintf(stdout, "worker process collections in those runs by round: %s\n", counts(sum.collections))
			}
		}
		printTimelines(stdout, cfg.Window, rounds, results)
	}
	if failed != nil {
		fmt.Fprintln(stderr, "convload:", failed)
		return 1
	}
	return 0
}

// summary holds what report prints under the table.
type summary struct {
	ratios  []float64       // worker peak / raw peak, by round
	halfP99 []time.Duration // the worker's p99 at a target rate (half of its peak), by round
	// rawHalfP99 is raw JetStream's p99 at that rate, by round (with
	// --raw): how much of the worker's tail the machine and the server
	// make on their own, in the same minutes.
	rawHalfP99 []time.Duration
	// halfRate is that rate. A build with a higher peak is measured at a
	// higher load, which sequences of two builds must be read with.
	halfRate float64
	// collections is how many collections of the worker process ended in
	// each of those runs; nil when not known (no --worker-pprof).
	collections []int
}

func summarize(results []roundResult) summary {
	var s summary
	rawPeak := map[int]float64{}
	for _, r := range results {
		if r.Rate == 0 && strings.HasPrefix(r.Name, "raw") && r.Received > 0 {
			rawPeak[r.Round] = r.Throughput
		}
	}
	for _, r := range results {
		if r.Rate > 0 && strings.HasPrefix(r.Name, "raw") && r.Received > 0 {
			s.rawHalfP99 = append(s.rawHalfP99, r.P99)
		}
		if !strings.HasPrefix(r.Name, "worker") || r.Received == 0 {
			continue
		}
		if r.Rate == 0 && rawPeak[r.Round] > 0 {
			s.ratios = append(s.ratios, r.Throughput/rawPeak[r.Round])
		} else if r.Rate > 0 {
			s.halfP99 = append(s.halfP99, r.P99)
			s.halfRate = r.Rate
			if r.Collections != nil {
				s.collections = append(s.collections, *r.Collections)
			}
		}
	}
	return s
}

// printTimelines prints, for each run, its p99 in every window of
// publishing, in milliseconds.
func printTimelines(w io.Writer, window time.Duration, rounds int, results []roundResult) {
	if window <= 0 {
		return
	}
	fmt.Fprintf(w, "\np99 (ms) of the events published in each %v of a run, and under it how busy the machine's CPUs were (%%):\n", window)
	for _, r := range results {
		parts := make([]string, len(r.Timeline))
		busy := make([]string, len(r.Timeline))
		known := false
		for i, win := range r.Timeline {
			p99, b := shortMS(win.P99), "-"
			if win.CPUBusy > 0 {
				b = fmt.Sprintf("%.0f", 100*win.CPUBusy)
			}
			n := max(len(p99), len(b)) // the columns line up
			parts[i], busy[i] = fmt.Sprintf("%*s", n, p99), fmt.Sprintf("%*s", n, b)
			known = known || win.CPUBusy > 0
		}
		fmt.Fprintf(w, "%-18s %s\n", r.label(rounds), strings.Join(parts, " "))
		if known {
			fmt.Fprintf(w, "%-18s %s\n", "  cpu busy", strings.Join(busy, " "))
		}
	}
}

// shortMS is d in milliseconds, one decimal below 10.
func shortMS(d time.Duration) string {
	v := float64(d) / 1e6
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// percent is a share in whole percent, "-" when unknown (0).
func percent(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// cores formats a CPU use in cores, "-" when unknown.
func cores(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

func percents(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f%%", 100*x)
	}
	return strings.Join(parts, ", ")
}

func counts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = ms(d)
	}
	return strings.Join(parts, ", ")
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
	thp := ""
	if mode := hugepages.Mode(); mode != "" {
		// Whether a Go heap on this machine gets huge pages: it decides
		// much of a worker's tail here (docs/operations.md).
		thp = ", transparent huge pages " + mode
	}
	return fmt.Sprintf("%s%s/%s, %d CPUs (the load generator's GOMAXPROCS %d), %s%s", model, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), thp)
}
