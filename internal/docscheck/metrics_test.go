package docscheck

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
)

// TestMetricsDocumented: the metrics table of docs/operations.md,
// "Metrics and alerts", lists every instrument a worker registers, under
// the name Prometheus gives it at /metrics, and nothing the worker does not
// register; the section "The orchestrator" names every instrument an
// orchestrator registers. The instruments are those worker.New and
// orchestrator.New create on the meter provider they are given, which
// records them.
func TestMetricsDocumented(t *testing.T) {
	ns := workertest.Server(t, natsembed.Config{})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	doc, err := Read(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{MeterProvider: metricnoop.NewMeterProvider()}
	if _, err := worker.New(nc, worker.WithMeterProvider(rec)); err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, in := range rec.list() {
		registered[in.prometheusName()] = true
	}
	if len(registered) < 20 {
		t.Fatalf("the worker registered %d instruments: %v", len(registered), registered)
	}
	documented := doc.metricNames("Metrics and alerts")
	for name := range registered {
		if !documented[name] {
			t.Errorf("the worker registers %s (at /metrics), but docs/operations.md, \"Metrics and alerts\", has no row for it: add one (metric, type and labels, what it says, alert on)", name)
		}
	}
	for name := range documented {
		if !registered[name] {
			t.Errorf("docs/operations.md, \"Metrics and alerts\", lists %s, which the worker does not register: remove or rename its row", name)
		}
	}

	builtin, err := models.NewBuiltin(models.BuiltinConfig{TokensPerChunk: 1})
	if err != nil {
		t.Fatal(err)
	}
	orec := &recorder{MeterProvider: metricnoop.NewMeterProvider()}
	if _, err := orchestrator.New(nc, orchestrator.WithModel(builtin), orchestrator.WithMeterProvider(orec)); err != nil {
		t.Fatal(err)
	}
	section := doc.section("The orchestrator")
	for _, in := range orec.list() {
		if !strings.Contains(section, "`"+in.name+"`") {
			t.Errorf("the orchestrator registers %s, which docs/operations.md, \"The orchestrator\", does not name", in.name)
		}
	}
}

// section returns the text of the section under the heading named
// heading, through its subsections.
func (d *Doc) section(heading string) string {
	var b strings.Builder
	in, level := false, 0
	for _, l := range d.Lines {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			n := len(l) - len(strings.TrimLeft(l, "#"))
			if strings.TrimSpace(m[1]) == heading {
				in, level = true, n
				continue
			} else if in && n <= level {
				break
			}
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

var promNameRE = regexp.MustCompile("`(convstream_[a-z0-9_]+)`")

// metricNames returns the convstream_* names in the first column of the
// tables of the section under heading.
func (d *Doc) metricNames(heading string) map[string]bool {
	names := map[string]bool{}
	for _, l := range strings.Split(d.section(heading), "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		first := strings.Split(strings.Trim(l, "| "), "|")[0]
		for _, m := range promNameRE.FindAllStringSubmatch(first, -1) {
			names[m[1]] = true
		}
	}
	return names
}

// instrument is an instrument as created on a meter.
type instrument struct {
	name, unit string
	counter    bool // a monotonic counter: _total at /metrics
}

// prometheusName returns the name the Prometheus exporter gives the
// instrument: dots made underscores, the unit as a suffix (s: _seconds,
// By: _bytes; none for an annotation like {event}), and _total on a
// counter.
func (in instrument) prometheusName() string {
	n := strings.ReplaceAll(in.name, ".", "_")
	suffix := map[string]string{"s": "_seconds", "By": "_bytes", "ms": "_milliseconds"}[in.unit]
	if suffix != "" && !strings.HasSuffix(n, suffix) {
		n += suffix
	}
	if in.counter {
		n += "_total"
	}
	return n
}

// recorder is a meter provider that records the instruments created on
// its meters and leaves the rest to the provider it wraps.
type recorder struct {
	metric.MeterProvider
	mu          sync.Mutex
	instruments []instrument
}

func (r *recorder) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &recordingMeter{Meter: r.MeterProvider.Meter(name, opts...), r: r}
}

func (r *recorder) add(name, unit string, counter bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.instruments = append(r.instruments, instrument{name: name, unit: unit, counter: counter})
}

func (r *recorder) list() []instrument {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.instruments)
}

type recordingMeter struct {
	metric.Meter
	r *recorder
}

func (m *recordingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.r.add(name, metric.NewInt64CounterConfig(opts...).Unit(), true)
	return m.Meter.Int64Counter(name, opts...)
}

func (m *recordingMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.r.add(name, metric.NewInt64UpDownCounterConfig(opts...).Unit(), false)
	return m.Meter.Int64UpDownCounter(name, opts...)
}

func (m *recordingMeter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.r.add(name, metric.NewInt64HistogramConfig(opts...).Unit(), false)
	return m.Meter.Int64Histogram(name, opts...)
}

func (m *recordingMeter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.r.add(name, metric.NewInt64GaugeConfig(opts...).Unit(), false)
	return m.Meter.Int64Gauge(name, opts...)
}

func (m *recordingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.r.add(name, metric.NewInt64ObservableCounterConfig(opts...).Unit(), true)
	return m.Meter.Int64ObservableCounter(name, opts...)
}

func (m *recordingMeter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.r.add(name, metric.NewInt64ObservableUpDownCounterConfig(opts...).Unit(), false)
	return m.Meter.Int64ObservableUpDownCounter(name, opts...)
}

func (m *recordingMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.r.add(name, metric.NewInt64ObservableGaugeConfig(opts...).Unit(), false)
	return m.Meter.Int64ObservableGauge(name, opts...)
}

func (m *recordingMeter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.r.add(name, metric.NewFloat64CounterConfig(opts...).Unit(), true)
	return m.Meter.Float64Counter(name, opts...)
}

func (m *recordingMeter) Float64UpDownCounter(name string, opts ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.r.add(name, metric.NewFloat64UpDownCounterConfig(opts...).Unit(), false)
	return m.Meter.Float64UpDownCounter(name, opts...)
}

func (m *recordingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.r.add(name, metric.NewFloat64HistogramConfig(opts...).Unit(), false)
	return m.Meter.Float64Histogram(name, opts...)
}

func (m *recordingMeter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.r.add(name, metric.NewFloat64GaugeConfig(opts...).Unit(), false)
	return m.Meter.Float64Gauge(name, opts...)
}

func (m *recordingMeter) Float64ObservableCounter(name string, opts ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.r.add(name, metric.NewFloat64ObservableCounterConfig(opts...).Unit(), true)
	return m.Meter.Float64ObservableCounter(name, opts...)
}

func (m *recordingMeter) Float64ObservableUpDownCounter(name string, opts ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.r.add(name, metric.NewFloat64ObservableUpDownCounterConfig(opts...).Unit(), false)
	return m.Meter.Float64ObservableUpDownCounter(name, opts...)
}

func (m *recordingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.r.add(name, metric.NewFloat64ObservableGaugeConfig(opts...).Unit(), false)
	return m.Meter.Float64ObservableGauge(name, opts...)
}
