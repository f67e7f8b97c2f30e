package otelsetup

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// failingExporter refuses every export, as an unreachable collector does.
type failingExporter struct{ *tracetest.InMemoryExporter }

func (failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("collector unreachable")
}

func TestExportErrorsGoThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	tr := TracesTo(LogSpanErrors(failingExporter{tracetest.NewInMemoryExporter()}, log), nil)
	_, span := tr.Provider.Tracer("test").Start(context.Background(), "x")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !strings.Contains(buf.String(), `"msg":"exporting traces failed"`) || !strings.Contains(buf.String(), "collector unreachable") {
		t.Fatalf("log: %s", buf.String())
	}
}

func TestTracesFromEnvironment(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	tr, err := Traces(context.Background(), getenv, log, nil)
	if err != nil || tr.Provider.Tracer("x") == nil {
		t.Fatalf("unset: %v", err)
	}
	if _, ok := tr.Provider.(*sdktrace.TracerProvider); ok {
		t.Fatal("traces exported with no OTEL_* variable set")
	}
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
	if tr, err = Traces(context.Background(), getenv, log, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Provider.(*sdktrace.TracerProvider); !ok {
		t.Fatalf("endpoint set, provider %T", tr.Provider)
	}
	_ = tr.Shutdown(context.Background())
	env["OTEL_TRACES_EXPORTER"] = "zipkin"
	if _, err := Traces(context.Background(), getenv, log, nil); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER=zipkin") {
		t.Fatalf("zipkin: %v", err)
	}
}
