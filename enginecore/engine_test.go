package enginecore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convstream/convstream/enginecore"
)

// mark returns a processor that records its name in the metadata.
func mark(name string) enginecore.Processor {
	return enginecore.NewFunc(name, func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Metadata[name] = true
		return next, nil
	})
}

func sleeper(name string, d time.Duration) enginecore.Processor {
	return enginecore.NewFunc(name, func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		time.Sleep(d)
		return pc, nil
	})
}

func aborter(name, reason string) enginecore.Processor {
	return enginecore.NewFunc(name, func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		return pc.Abort(reason), nil
	})
}

func failer(name string, err error) enginecore.Processor {
	return enginecore.NewFunc(name, func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		return nil, err
	})
}

func names(ps []enginecore.Processor) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return strings.Join(out, ",")
}

func input() []enginecore.Message {
	return []enginecore.Message{{"role": "user", "content": "test"}}
}

func TestProcessRunsInOrder(t *testing.T) {
	var order []string
	rec := func(name string) enginecore.Processor {
		return enginecore.NewFunc(name, func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
			order = append(order, name)
			return pc, nil
		})
	}
	e := enginecore.New(enginecore.WithProcessors(rec("a"), rec("b"), rec("c")))
	res, err := e.Process(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "a,b,c" {
		t.Fatalf("order = %s", got)
	}
	if res.Stats.ProcessedCount != 3 {
		t.Fatalf("ProcessedCount = %d", res.Stats.ProcessedCount)
	}
	if len(res.Messages) != 1 || res.Messages[0]["content"] != "test" {
		t.Fatalf("messages = %v", res.Messages)
	}
	if res.IsAborted {
		t.Fatal("unexpected abort")
	}
}

func TestProcessInitialState(t *testing.T) {
	msgs := input()
	var seen map[string]any
	e := enginecore.New(enginecore.WithProcessors(enginecore.NewFunc("peek", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		seen = pc.InitialState
		return pc, nil
	})))
	if _, err := e.Process(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	got, ok := seen["messages"].([]enginecore.Message)
	if !ok || len(got) != 1 || got[0]["content"] != "test" {
		t.Fatalf("initial state = %v", seen)
	}
}

func TestProcessContextKeepsMetadataAndInput(t *testing.T) {
	pc := &enginecore.PipelineContext{
		Messages: input(),
		Metadata: map[string]any{"model": "gpt-4"},
	}
	e := enginecore.New(enginecore.WithProcessors(mark("p1")))
	res, err := e.ProcessContext(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Metadata["model"] != "gpt-4" || res.Metadata["p1"] != true {
		t.Fatalf("metadata = %v", res.Metadata)
	}
	if _, ok := pc.Metadata["p1"]; ok {
		t.Fatal("caller's metadata was modified")
	}
}

func TestProcessDoesNotTouchCallerSlice(t *testing.T) {
	msgs := []enginecore.Message{{"role": "user", "content": "a"}, {"role": "user", "content": "b"}}
	swap := enginecore.NewFunc("swap", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		// A careless processor writing into the slice it was given: the
		// engine hands it a private copy, so the caller never sees it.
		pc.Messages[0], pc.Messages[1] = pc.Messages[1], pc.Messages[0]
		return pc, nil
	})
	res, err := enginecore.New(enginecore.WithProcessors(swap)).Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0]["content"] != "a" {
		t.Fatal("caller's slice was modified")
	}
	if res.Messages[0]["content"] != "b" {
		t.Fatal("processor result lost")
	}
}

func TestAbortStopsPipeline(t *testing.T) {
	e := enginecore.New(enginecore.WithProcessors(mark("p1"), aborter("stop", "test abort"), mark("p3")))
	res, err := e.Process(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsAborted || res.AbortReason != "test abort" {
		t.Fatalf("abort = %v %q", res.IsAborted, res.AbortReason)
	}
	if res.Metadata["p1"] != true {
		t.Fatal("p1 did not run")
	}
	if _, ok := res.Metadata["p3"]; ok {
		t.Fatal("p3 ran after abort")
	}
	if res.Stats.ProcessedCount != 2 {
		t.Fatalf("ProcessedCount = %d, want 2", res.Stats.ProcessedCount)
	}
	if _, ok := res.Stats.Duration("p3"); ok {
		t.Fatal("p3 has a duration")
	}
}

func TestAbortedInputRunsNothing(t *testing.T) {
	e := enginecore.New(enginecore.WithProcessors(mark("p1")))
	res, err := e.ProcessContext(context.Background(), &enginecore.PipelineContext{IsAborted: true, AbortReason: "already"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.ProcessedCount != 0 || !res.IsAborted || res.AbortReason != "already" {
		t.Fatalf("result = %+v", res)
	}
}

func TestErrorIsWrapped(t *testing.T) {
	cause := errors.New("Processing failed")
	e := enginecore.New(enginecore.WithProcessors(mark("p1"), failer("errorProcessor", cause), mark("p3")))
	res, err := e.Process(context.Background(), input())
	if res != nil {
		t.Fatal("result returned with error")
	}
	var pe *enginecore.PipelineError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T is not a *PipelineError", err)
	}
	if pe.Processor != "errorProcessor" {
		t.Fatalf("Processor = %q", pe.Processor)
	}
	if !errors.Is(err, cause) {
		t.Fatal("cause not reachable with errors.Is")
	}
	if got, want := err.Error(), "Processor [errorProcessor] execution failed: Processing failed"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestErrorCauseIsCut(t *testing.T) {
	long := strings.Repeat("x", 500)
	_, err := enginecore.New(enginecore.WithProcessors(failer("p", errors.New(long)))).Process(context.Background(), nil)
	want := "Processor [p] execution failed: " + strings.Repeat("x", 300) + "…"
	if err.Error() != want {
		t.Fatalf("Error() = %q", err.Error())
	}

	exact := strings.Repeat("é", 300)
	_, err = enginecore.New(enginecore.WithProcessors(failer("p", errors.New(exact)))).Process(context.Background(), nil)
	if err.Error() != "Processor [p] execution failed: "+exact {
		t.Fatal("a 300-character cause must not be cut")
	}

	_, err = enginecore.New(enginecore.WithProcessors(failer("p", errors.New(exact+"é")))).Process(context.Background(), nil)
	if err.Error() != "Processor [p] execution failed: "+exact+"…" {
		t.Fatal("cut must count characters, not bytes")
	}
	var pe *enginecore.PipelineError
	if !errors.As(err, &pe) || pe.Cause.Error() != exact+"é" {
		t.Fatal("Cause must keep the full message")
	}
}

func TestPanicIsRecovered(t *testing.T) {
	boom := enginecore.NewFunc("boom", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		panic(errors.New("nil map write"))
	})
	_, err := enginecore.New(enginecore.WithProcessors(boom)).Process(context.Background(), input())
	var pe *enginecore.PipelineError
	if !errors.As(err, &pe) || pe.Processor != "boom" {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, enginecore.ErrProcessorPanic) {
		t.Fatalf("panic not marked: %v", err)
	}
	if !strings.Contains(err.Error(), "nil map write") {
		t.Fatalf("panic value lost: %v", err)
	}

	str := enginecore.NewFunc("str", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		panic("plain value")
	})
	_, err = enginecore.New(enginecore.WithProcessors(str)).Process(context.Background(), input())
	if !errors.Is(err, enginecore.ErrProcessorPanic) || !strings.Contains(err.Error(), "plain value") {
		t.Fatalf("err = %v", err)
	}
}

func TestNilResultIsAnError(t *testing.T) {
	nothing := enginecore.NewFunc("nothing", func(context.Context, *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		return nil, nil
	})
	_, err := enginecore.New(enginecore.WithProcessors(nothing)).Process(context.Background(), nil)
	if !errors.Is(err, enginecore.ErrNilContext) {
		t.Fatalf("err = %v", err)
	}
}

func TestDurations(t *testing.T) {
	e := enginecore.New(enginecore.WithProcessors(sleeper("slow", 20*time.Millisecond), mark("fast")))
	res, err := e.Process(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stats.ProcessorDurations) != 2 || res.Stats.ProcessorDurations[0].Name != "slow" || res.Stats.ProcessorDurations[1].Name != "fast" {
		t.Fatalf("durations = %+v", res.Stats.ProcessorDurations)
	}
	slow, _ := res.Stats.Duration("slow")
	if slow < 20*time.Millisecond {
		t.Fatalf("slow took %v", slow)
	}
	if res.Stats.TotalDuration < slow {
		t.Fatalf("total %v < slow %v", res.Stats.TotalDuration, slow)
	}

	// A failing processor still gets a duration entry.
	_, err = enginecore.New(enginecore.WithProcessors(failer("bad", errors.New("x")))).Process(context.Background(), nil)
	if err == nil {
		t.Fatal("expected error")
	}
}

func TestStatsJSON(t *testing.T) {
	s := enginecore.Stats{
		ProcessedCount:     1,
		ProcessorDurations: []enginecore.ProcessorDuration{{Name: "a", Duration: 1500 * time.Microsecond}},
		TotalDuration:      2 * time.Millisecond,
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"processedCount":1,"processorDurations":[{"name":"a","durationMs":1.5}],"totalDurationMs":2}`
	if string(b) != want {
		t.Fatalf("json = %s", b)
	}
	var back enginecore.Stats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.TotalDuration != s.TotalDuration || back.ProcessorDurations[0] != s.ProcessorDurations[0] {
		t.Fatalf("round trip = %+v", back)
	}
}

func TestPipelineErrorJSON(t *testing.T) {
	err := &enginecore.PipelineError{Processor: "p", Cause: errors.New("boom")}
	b, _ := json.Marshal(err)
	var got map[string]any
	if e := json.Unmarshal(b, &got); e != nil {
		t.Fatal(e)
	}
	if got["name"] != "PipelineError" || got["processorName"] != "p" || got["cause"] != "boom" ||
		got["message"] != "Processor [p] execution failed: boom" {
		t.Fatalf("json = %s", b)
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	canceller := enginecore.NewFunc("canceller", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		cancel()
		return pc, nil
	})
	ran := false
	after := enginecore.NewFunc("after", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		ran = true
		return pc, nil
	})
	_, err := enginecore.New(enginecore.WithProcessors(canceller, after)).Process(ctx, input())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if ran {
		t.Fatal("processor ran after cancellation")
	}
	var pe *enginecore.PipelineError
	if errors.As(err, &pe) {
		t.Fatal("cancellation is not a processor failure")
	}

	ctx, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-ctx.Done()
	_, err = enginecore.New(enginecore.WithProcessors(mark("p"))).Process(ctx, input())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestFluentAPI(t *testing.T) {
	e := enginecore.New()
	if got := e.AddProcessor(mark("p1")).AddProcessor(mark("p2")).AddProcessor(mark("p3")); got != e {
		t.Fatal("AddProcessor does not chain")
	}
	if names(e.Processors()) != "p1,p2,p3" {
		t.Fatalf("processors = %s", names(e.Processors()))
	}
	e.RemoveProcessor("p2").RemoveProcessor("nonexistent")
	if names(e.Processors()) != "p1,p3" {
		t.Fatalf("after remove = %s", names(e.Processors()))
	}
	list := e.Processors()
	list[0] = mark("changed")
	if names(e.Processors()) != "p1,p3" {
		t.Fatal("Processors() exposes the internal list")
	}
	if len(e.Clear().Processors()) != 0 {
		t.Fatal("Clear left processors")
	}
}

func TestCloneIsIndependent(t *testing.T) {
	e := enginecore.New(enginecore.WithProcessors(mark("p1"), mark("p2")))
	c := e.Clone()
	c.AddProcessor(mark("p3"))
	e.RemoveProcessor("p1")
	if names(e.Processors()) != "p2" {
		t.Fatalf("original = %s", names(e.Processors()))
	}
	if names(c.Processors()) != "p1,p2,p3" {
		t.Fatalf("clone = %s", names(c.Processors()))
	}
	res, err := c.Process(context.Background(), input())
	if err != nil || res.Stats.ProcessedCount != 3 {
		t.Fatalf("clone run: %v %+v", err, res)
	}
}

func TestValidate(t *testing.T) {
	if err := enginecore.New(enginecore.WithProcessors(mark("a"), mark("b"))).Validate(); err != nil {
		t.Fatalf("valid pipeline: %v", err)
	}
	if err := enginecore.New().Validate(); !errors.Is(err, enginecore.ErrEmptyPipeline) {
		t.Fatalf("empty: %v", err)
	}
	err := enginecore.New(enginecore.WithProcessors(mark("a"), mark("b"), mark("a"), mark("b"), mark("a"))).Validate()
	if !errors.Is(err, enginecore.ErrDuplicateProcessor) || !strings.Contains(err.Error(), "duplicate processor names: a, b") {
		t.Fatalf("duplicates: %v", err)
	}
	err = enginecore.New(enginecore.WithProcessors(mark(""), nil)).Validate()
	if !errors.Is(err, enginecore.ErrUnnamedProcessor) || !errors.Is(err, enginecore.ErrNilProcessor) {
		t.Fatalf("unnamed/nil: %v", err)
	}
}

type recordingObserver struct {
	mu     sync.Mutex
	events []string
}

type ctxKey struct{}

func (o *recordingObserver) ProcessorStarted(ctx context.Context, name string) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "start:"+name)
	return context.WithValue(ctx, ctxKey{}, name)
}

func (o *recordingObserver) ProcessorFinished(ctx context.Context, name string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := "finish:" + name
	if ctx.Value(ctxKey{}) != name {
		ev += "(wrong ctx)"
	}
	if err != nil {
		ev += "(err)"
	}
	o.events = append(o.events, ev)
}

func TestObserver(t *testing.T) {
	obs := &recordingObserver{}
	sawCtx := false
	check := enginecore.NewFunc("check", func(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		sawCtx = ctx.Value(ctxKey{}) == "check"
		return pc, nil
	})
	e := enginecore.New(enginecore.WithObserver(obs), enginecore.WithProcessors(check, failer("bad", errors.New("x"))))
	if _, err := e.Process(context.Background(), input()); err == nil {
		t.Fatal("expected error")
	}
	if !sawCtx {
		t.Fatal("processor did not get the observer's context")
	}
	if got := strings.Join(obs.events, " "); got != "start:check finish:check start:bad finish:bad(err)" {
		t.Fatalf("events = %s", got)
	}
}

func TestConcurrentProcess(t *testing.T) {
	e := enginecore.New(enginecore.WithProcessors(mark("a"), mark("b")))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, err := e.Process(context.Background(), input())
			if err != nil || res.Stats.ProcessedCount < 2 {
				t.Errorf("run: %v", err)
			}
		})
	}
	e.AddProcessor(mark("c"))
	wg.Wait()
}
