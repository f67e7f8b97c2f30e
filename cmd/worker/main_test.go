package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
)

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer = natstest.SyncBuffer

// TestRunServesAndStops runs the worker as main does, on free ports, and
// uses it as convctl would: health endpoints, an event, its snapshot, an
// inference request through the built-in default pipeline; then stops it
// as SIGTERM does.
func TestRunServesAndStops(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	env := map[string]string{
		"CONVSTREAM_DATA_DIR":      filepath.Join(dir, "data"),
		"CONVSTREAM_NATS_PASSWORD": "s3cret-not-logged",
	}
	type addrs struct{ nats, http string }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:-1", "--http", "127.0.0.1:0", "--log-level", "debug"},
			func(k string) string { return env[k] }, logs,
			func(_ *worker.Worker, natsURL, httpAddr string) { ready <- addrs{natsURL, httpAddr} })
	}()
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready\n%s", logs)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + a.http + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}

	nc, err := nats.Connect(a.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []map[string]any{
		{"id": "u1", "role": "user", "content": "What is NATS?", "parentId": nil, "createdAt": 1.0},
		{"id": "a1", "role": "assistant", "content": "A messaging system.", "parentId": "u1", "createdAt": 2.0},
		{"id": "u2", "role": "user", "content": "And JetStream?", "parentId": "a1", "createdAt": 3.0},
	}
	for _, m := range msgs {
		if _, err := c.Send(ctx, "smoke", streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := c.Snapshot(ctx, "smoke")
		if err == nil && s.Version == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot: %+v %v", s, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	reply, err := c.Infer(ctx, streams.InferenceRequest{ConversationID: "smoke",
		Params: map[string]any{"SystemRoleInjector": map[string]any{"systemRole": "Answer briefly."}}})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Type() != streams.TypeInferenceContext {
		t.Fatalf("reply %s: %s", reply.Type(), reply.Data())
	}
	var out streams.InferenceContext
	if err := json.Unmarshal(reply.Data(), &out); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range out.Messages {
		roles = append(roles, m["role"].(string))
	}
	if len(out.Messages) < 3 || out.Stats.ProcessedCount == 0 || !strings.Contains(string(reply.Data()), "Answer briefly.") {
		t.Errorf("default pipeline output: roles %v, %d processors\n%s", roles, out.Stats.ProcessedCount, reply.Data())
	}
	t.Logf("default pipeline: %d processors ran, roles %v, %v", out.Stats.ProcessedCount, roles, out.Stats.TotalDuration)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop")
	}
	if _, err := http.Get("http://" + a.http + "/healthz"); err == nil {
		t.Error("health endpoint still served after shutdown")
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Error("a secret reached the log")
	}
	for _, want := range []string{`"msg":"worker consuming"`, `"msg":"worker stopped"`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "jetstream")); err != nil {
		t.Errorf("store: %v", err)
	}
}

// TestRunChecksSettingsFirst: a worker setting out of range (here
// --loads 0) ends run with the configuration error before the embedded
// server starts: nothing is written to the data directory.
func TestRunChecksSettingsFirst(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	logs := &syncBuffer{}
	err := run(context.Background(), []string{"--loads", "0", "--data-dir", data, "--listen", "127.0.0.1:-1", "--http", "off"},
		func(string) string { return "" }, logs, nil)
	if !errors.Is(err, streams.ErrInvalidConfig) {
		t.Fatalf("run: %v, want ErrInvalidConfig\n%s", err, logs)
	}
	if _, statErr := os.Stat(data); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("the data directory exists (%v): the server started before the settings were checked\n%s", statErr, logs)
	}
}

func TestFlagsFromEnvironment(t *testing.T) {
	env := map[string]string{"CONVSTREAM_LANES": "3", "CONVSTREAM_SUBJECT_PREFIX": "acme", "CONVSTREAM_MAX_MESSAGES": "50"}
	o, err := parseFlags([]string{"--lanes", "5"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.lanes != 5 || o.prefix != "acme" || o.limits.MaxMessages != 50 || o.listen != "127.0.0.1:4222" || o.dataDir != "./data" {
		t.Errorf("options = %+v", o)
	}

	// The flags the Helm chart passes.
	chart := []string{"--nats-url=nats://nats:4222", "--subject-prefix=convstream", "--http=0.0.0.0:8080",
		"--nats-creds=/etc/convstream/nats/creds/nats.creds", "--nats-tls-ca=/ca.crt", "--nats-tls-cert=/tls.crt", "--nats-tls-key=/tls.key",
		"--stream-replicas=3", "--bucket-replicas=3", "--stream-max-bytes=10GiB", "--stream-max-age=720h",
		"--duplicate-window=5m", "--placement-cluster=east", "--placement-tags=ssd,fast",
		"--max-event-bytes=1048576", "--max-messages=10000", "--max-snapshot-bytes=0", "--cache-conversations=10000",
		"--cache-bytes=536870912", "--partitions=6", "--pinned-ttl=15s", "--watch-idle=10m", "--snapshot-interval=100ms", "--snapshot-max-interval=2s",
		"--heads-confirmed-from=64KiB", "--store-stall-limit=3m", "--checkpoints=false", "--reconcile", "--pipelines-dir=/etc/convstream/pipelines", "--ack-wait=2m"}
	o, err = parseFlags(chart, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	st := o.storage
	if st.StreamReplicas != 3 || st.BucketReplicas != 3 || st.StreamMaxBytes != 10<<30 || st.StreamMaxAge != 720*time.Hour ||
		st.DuplicateWindow != 5*time.Minute || st.PlacementCluster != "east" || len(st.PlacementTags) != 2 ||
		st.Partitions != 6 || !st.Reconcile || o.pinnedTTL != 15*time.Second || o.snapshotInterval != 100*time.Millisecond || o.snapshotMax != 2*time.Second || o.headsFrom != 64<<10 || o.storeStall != 3*time.Minute || o.checkpoints ||
		o.pipelinesDir != "/etc/convstream/pipelines" || o.ackWait != 2*time.Minute || o.conn.Creds == "" || o.cacheBytes != 512<<20 || st.WatchIdle != 10*time.Minute {
		t.Errorf("chart flags: %+v", o)
	}
	if o, err = parseFlags(nil, func(string) string { return "" }, io.Discard); err != nil || o.storeStall != worker.DefaultStoreStallLimit || o.headsFrom != worker.DefaultHeadsConfirmedFrom {
		t.Errorf("store stall limit and confirmed heads by default: %v, %d, %v", o.storeStall, o.headsFrom, err)
	}
	if o, err = parseFlags(nil, func(k string) string {
		return map[string]string{"CONVSTREAM_STORE_STALL_LIMIT": "90s"}[k]
	}, io.Discard); err != nil || o.storeStall != 90*time.Second {
		t.Errorf("CONVSTREAM_STORE_STALL_LIMIT=90s: %v, %v", o.storeStall, err)
	}
	env["CONVSTREAM_NATS_TOKEN"] = "Xy7-secret-token"
	env["CONVSTREAM_CACHE_CONVERSATIONS"] = "many"
	var help bytes.Buffer
	_, err = parseFlags(nil, func(k string) string { return env[k] }, &help)
	if err == nil || !strings.Contains(err.Error(), "CONVSTREAM_CACHE_CONVERSATIONS") || strings.Contains(err.Error(), "many") {
		t.Errorf("bad env value: %v", err)
	}
	help.Reset()
	_, err = parseFlags([]string{"-help"}, func(k string) string { return env[k] }, &help)
	if !errors.Is(err, flag.ErrHelp) || strings.Contains(help.String(), "Xy7") || !strings.Contains(help.String(), "$CONVSTREAM_NATS_URL") {
		t.Errorf("help: %v\n%s", err, help.String())
	}
}

func TestSpecPipelines(t *testing.T) {
	dir := t.TempDir()
	spec := "name: short\nprocessors:\n  - name: HistoryTruncateProcessor\n    config:\n      enableHistoryCount: true\n      historyCount: 1\n"
	if err := os.WriteFile(filepath.Join(dir, "short.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newSpecPipelines(processors.Default(), dir)
	ctx := context.Background()
	def, err := p.Pipeline(ctx, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := p.Pipeline(ctx, "default", nil)
	if def != again {
		t.Error("default engine rebuilt")
	}
	// The other built-in spec, served without a file.
	me, err := p.Pipeline(ctx, "messages-engine", nil)
	if err != nil || len(me.Processors()) <= len(def.Processors()) {
		t.Fatalf("messages-engine: %v", err)
	}
	short, err := p.Pipeline(ctx, "short", nil)
	if err != nil {
		t.Fatal(err)
	}
	in := []enginecore.Message{{"id": "1", "role": "user", "content": "a"}, {"id": "2", "role": "assistant", "content": "b"}, {"id": "3", "role": "user", "content": "c"}}
	res, err := short.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0]["content"] != "c" {
		t.Errorf("short: %v", res.Messages)
	}
	wide, err := p.Pipeline(ctx, "short", map[string]any{"HistoryTruncateProcessor": map[string]any{"historyCount": 2.0}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = wide.Process(ctx, in); err != nil || len(res.Messages) != 2 {
		t.Errorf("params: %v %v", res, err)
	}
	if res, _ := short.Process(ctx, in); len(res.Messages) != 1 {
		t.Error("params changed the shared engine")
	}
	for _, name := range []string{"nope", "../short", ""} {
		if _, err := p.Pipeline(ctx, name, nil); !errors.Is(err, streams.ErrUnknownPipeline) {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := p.Pipeline(ctx, "short", map[string]any{"NotInSpec": map[string]any{}}); err == nil {
		t.Error("params for a processor not in the spec accepted")
	}
	if _, err := p.Pipeline(ctx, "short", map[string]any{"HistoryTruncateProcessor": 3.0}); err == nil {
		t.Error("non-object params accepted")
	}
}

func TestTelemetryFromEnvironment(t *testing.T) {
	ctx := context.Background()
	none := map[string]string{}
	tel, err := setupTelemetry(ctx, func(k string) string { return none[k] }, discard())
	if err != nil || len(tel.shutdown) != 0 {
		t.Errorf("default: %v %d exporters", err, len(tel.shutdown))
	}
	on := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_METRICS_EXPORTER": "none"}
	tel, err = setupTelemetry(ctx, func(k string) string { return on[k] }, discard())
	if err != nil || len(tel.shutdown) != 1 {
		t.Errorf("endpoint: %v %d exporters", err, len(tel.shutdown))
	}
	_ = tel.close(ctx)
	both := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
	tel, err = setupTelemetry(ctx, func(k string) string { return both[k] }, discard())
	if err != nil || len(tel.shutdown) != 2 {
		t.Errorf("traces and metrics: %v %d exporters", err, len(tel.shutdown))
	} else {
		_ = tel.close(ctx) // nothing listens there: the last export fails
	}
	for _, bad := range []map[string]string{{"OTEL_TRACES_EXPORTER": "zipkin"}, {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}} {
		if _, err := setupTelemetry(ctx, func(k string) string { return bad[k] }, discard()); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestRuntimeMetrics collects once from the worker's meter provider: the
// Go runtime's metrics are there, next to the worker's own.
func TestRuntimeMetrics(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader(runtimeProducer())
	mp, err := meterProvider(resource.Empty(), reader)
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Shutdown(ctx)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = true
		}
	}
	for _, name := range []string{"go.memory.used", "go.memory.allocated", "go.memory.gc.goal", "go.config.gogc", "go.goroutine.count", "go.schedule.duration"} {
		if !got[name] {
			t.Errorf("no %s among %v", name, got)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestVersionFlag checks that --version stops the worker before it starts
// anything, with errVersion, on which main prints the build's version.
func TestVersionFlag(t *testing.T) {
	err := run(context.Background(), []string{"--version", "--nats-url", "nats://127.0.0.1:1"}, func(string) string { return "" }, io.Discard, nil)
	if !errors.Is(err, errVersion) {
		t.Fatalf("run --version: %v, want errVersion", err)
	}
}

// TestEventSizeUnits: --max-event-bytes and --max-snapshot-bytes take
// units, as --cache-bytes does (they took only bytes: "2MiB" was
// "invalid value").
func TestEventSizeUnits(t *testing.T) {
	env := map[string]string{"CONVSTREAM_MAX_SNAPSHOT_BYTES": "8MiB"}
	o, err := parseFlags([]string{"--max-event-bytes", "2MiB"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.limits.MaxEventBytes != 2<<20 || o.limits.MaxSnapshotBytes != 8<<20 {
		t.Errorf("limits %+v, want 2 MiB events and 8 MiB snapshots", o.limits)
	}
	if o, err = parseFlags(nil, func(string) string { return "" }, io.Discard); err != nil || o.limits.MaxEventBytes != worker.DefaultMaxEventBytes {
		t.Errorf("default: %v %+v", err, o)
	}
	if _, err := parseFlags([]string{"--max-event-bytes", "4GiB"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("--max-event-bytes 4GiB accepted")
	}
}
