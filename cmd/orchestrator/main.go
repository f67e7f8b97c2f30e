// Command orchestrator writes assistants' replies: it takes reply requests
// from the replies stream of a convstream deployment, asks a worker for
// each conversation's context, calls the model and streams the reply back
// (package streams/orchestrator).
//
// --model picks the model of requests that name none: builtin (no key, no
// network), openai:MODEL, anthropic:MODEL or gemini:MODEL. Keys come from
// OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or the file each
// *_FILE variable names, never from a flag; OPENAI_BASE_URL points the
// OpenAI client at vLLM, Ollama or LiteLLM. Traces and metrics go where
// the OTEL_* variables say (OTLP over HTTP), as the worker's do.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/convstream/convstream/internal/buildinfo"
	"github.com/convstream/convstream/internal/cliflags"
	"github.com/convstream/convstream/internal/healthswitch"
	"github.com/convstream/convstream/internal/otelsetup"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/orchestrator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errVersion):
		fmt.Println("orchestrator", buildinfo.Read())
	case err != nil:
		fmt.Fprintln(os.Stderr, "orchestrator:", err)
		os.Exit(1)
	}
}

var errVersion = errors.New("version requested")

// DefaultHTTP is the default of --http: beside a worker's 127.0.0.1:8080
// on one machine.
const DefaultHTTP = "127.0.0.1:8081"

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("orchestrator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef := cliflags.NewEnv(fs)
	var nf cliflags.NATS
	nf.Register(fs, ef)
	var of cliflags.Orchestrator
	of.Register(fs, ef, "", "builtin", "model of the requests that name none: builtin, openai:MODEL, anthropic:MODEL or gemini:MODEL")
	httpAddr := fs.String("http", DefaultHTTP, `address of /healthz, /readyz and /metrics ("off" to disable)`)
	ef.Bind("http", "CONVSTREAM_HTTP")
	metrics := fs.Bool("metrics", true, "serve the metrics at /metrics on the --http listener in the Prometheus text format, beside any OTLP export")
	ef.Bind("metrics", "CONVSTREAM_METRICS")
	scopeLabels := fs.Bool("metrics-scope-labels", false, "keep the otel_scope_name, otel_scope_version and otel_scope_schema_url labels on every series of /metrics")
	ef.Bind("metrics-scope-labels", "CONVSTREAM_METRICS_SCOPE_LABELS")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	ef.Bind("log-level", "CONVSTREAM_LOG_LEVEL")
	version := fs.Bool("version", false, "print the version and commit of this build and exit")
	if err := ef.Parse(args, getenv); err != nil {
		return err
	}
	if *version {
		return errVersion
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	subjects, err := streams.NewSubjects(nf.Prefix)
	if err != nil {
		return err
	}
	opts, err := of.Open(getenv)
	if err != nil {
		return err
	}
	res, err := otelsetup.Resource(ctx, "convstream-orchestrator")
	if err != nil {
		return err
	}
	tr, err := otelsetup.Traces(ctx, getenv, log, res)
	if err != nil {
		return err
	}
	defer func() { _ = tr.Shutdown(context.WithoutCancel(ctx)) }()
	serveHTTP := *httpAddr != "" && *httpAddr != "off"
	var readers []sdkmetric.Reader
	if want, err := otelsetup.ExporterWanted(getenv, "METRICS"); err != nil {
		return err
	} else if want && !otelsetup.Disabled(getenv) {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return fmt.Errorf("OTLP metric exporter: %w", err)
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(otelsetup.LogMetricErrors(exp, log)))
	}
	var metricsHandler http.Handler
	if serveHTTP && *metrics && !otelsetup.Disabled(getenv) {
		reader, h, err := otelsetup.Prometheus(*scopeLabels)
		if err != nil {
			return err
		}
		readers, metricsHandler = append(readers, reader), h
	}
	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	if len(readers) > 0 {
		mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			mpOpts = append(mpOpts, sdkmetric.WithReader(r))
		}
		smp := sdkmetric.NewMeterProvider(mpOpts...)
		defer func() { _ = smp.Shutdown(context.WithoutCancel(ctx)) }()
		mp = smp
	}
	// The probes answer before NATS is reached: live, not ready.
	health := healthswitch.New("connecting to NATS")
	if serveHTTP {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http: %w", err)
		}
		srv := &http.Server{Handler: otelsetup.WithMetrics(health, metricsHandler), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health endpoint", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("serving /healthz and /readyz", "addr", ln.Addr().String(), "metrics", metricsHandler != nil)
	}
	cfg := nf.Conn
	cfg.Name, cfg.Logger, cfg.Wait = "convstream-orchestrator", log, true
	nc, err := streams.Connect(cfg)
	if err != nil {
		return err
	}
	defer nc.Close()
	if !nc.IsConnected() {
		if err := streams.WaitConnected(ctx, nc); err != nil {
			return err
		}
	}
	opts = append(opts, orchestrator.WithSubjects(subjects), orchestrator.WithLogger(log), orchestrator.WithTracerProvider(tr.Provider), orchestrator.WithMeterProvider(mp))
	o, err := orchestrator.New(nc, opts...)
	if err != nil {
		return err
	}
	health.Set(o.HealthHandler())
	log.Info("writing replies", "model", of.Model, "concurrency", of.Concurrency, "nats", nc.ConnectedUrlRedacted())
	err = o.Run(ctx)
	if dErr := nc.Drain(); dErr != nil && err == nil {
		log.Warn("draining the NATS connection", "err", dErr)
	}
	return err
}
