package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/convstream/convstream/internal/otelsetup"
)

// tracerProviderKey carries, in a command's context, a tracer provider to
// use instead of the one the OTEL_* variables configure: the one-trace
// test's in-memory exporter (TestOneTraceFromSenderToProcessors).
type tracerProviderKey struct{}

// withTracerProvider returns ctx making the commands trace to tp.
func withTracerProvider(ctx context.Context, tp trace.TracerProvider) context.Context {
	return context.WithValue(ctx, tracerProviderKey{}, tp)
}

// tracing returns the tracer provider of a command, configured by the same
// OTEL_* variables as the worker's (internal/otelsetup), and the function
// that flushes its spans before the command exits. Export errors are logged
// on stderr. A configuration the variables get wrong is reported on stderr
// and the command goes on untraced: tracing is never why a send fails.
func tracing(ctx context.Context, stderr io.Writer) (trace.TracerProvider, func()) {
	if tp, ok := ctx.Value(tracerProviderKey{}).(trace.TracerProvider); ok {
		return tp, func() {}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := otelsetup.Resource(ctx, "convctl")
	if err != nil {
		log.Warn("telemetry off", "err", err)
		res = nil
	}
	t, err := otelsetup.Traces(ctx, os.Getenv, log, res)
	if err != nil {
		log.Warn("telemetry off", "err", err)
		return nil, func() {}
	}
	return t.Provider, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			log.Warn("flushing traces failed", "err", err)
		}
	}
}

// commandSpan starts the span of a command about a conversation, the
// parent of the spans of the events it sends; tp may be nil.
func commandSpan(ctx context.Context, tp trace.TracerProvider, name, conv string) (context.Context, trace.Span) {
	if tp == nil {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span
	}
	return tp.Tracer("github.com/convstream/convstream/cmd/convctl").Start(ctx, name,
		trace.WithAttributes(attribute.String("convstream.conversation_id", conv)))
}
