package enginecore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/convstream/convstream/enginecore"
)

func TestLimitsCombine(t *testing.T) {
	if got := enginecore.New().Limits(); got != enginecore.DefaultLimits() {
		t.Errorf("no limits given: %+v", got)
	}
	// The flag raises the default; a spec lowers one limit; whatever the
	// order, the smallest of each wins.
	worker := enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 16 << 20, MaxExpansionDepth: 3})
	spec := enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 1 << 20})
	for _, opts := range [][]enginecore.Option{{worker, spec}, {spec, worker}} {
		e := enginecore.New(opts...)
		if got := e.Limits(); got != (enginecore.Limits{MaxExpansionBytes: 1 << 20, MaxExpansionDepth: 3}) {
			t.Errorf("limits = %+v", got)
		}
		if got := e.Clone().Limits(); got != e.Limits() {
			t.Errorf("clone's limits = %+v", got)
		}
	}
	if got := enginecore.New(worker).Limits(); got.MaxExpansionBytes != 16<<20 {
		t.Errorf("a limit above the default: %+v", got)
	}
	if (enginecore.Limits{MaxExpansionDepth: -1}).Validate() == nil {
		t.Error("negative limit accepted")
	}
}

func TestBudget(t *testing.T) {
	b := enginecore.NewBudget(enginecore.Limits{MaxExpansionBytes: 100})
	if b.Limits().MaxExpansionDepth != enginecore.DefaultMaxExpansionDepth {
		t.Errorf("unset depth: %+v", b.Limits())
	}
	if err := b.Add(60); err != nil || b.Room() != 40 {
		t.Fatalf("add 60: %v, room %d", err, b.Room())
	}
	err := b.Add(41)
	var le *enginecore.LimitError
	if !errors.As(err, &le) || !errors.Is(err, enginecore.ErrLimitExceeded) || le.Limit != enginecore.LimitMaxExpansionBytes || le.Max != 100 || le.Want != 101 {
		t.Fatalf("add 41: %#v", err)
	}
	if want := "maxExpansionBytes exceeded: the expansion would add 101 bytes, the limit is 100"; err.Error() != want {
		t.Errorf("Error() = %q", err.Error())
	}
	if b.Room() != 40 || b.Add(-5) != nil || b.Add(40) != nil || b.Room() != 0 {
		t.Errorf("a refused add recorded something: room %d", b.Room())
	}

	// A nil budget is the default limits, nothing spent.
	var none *enginecore.Budget
	if none.Room() != enginecore.DefaultMaxExpansionBytes || none.Limits() != enginecore.DefaultLimits() ||
		none.Add(enginecore.DefaultMaxExpansionBytes) != nil || none.Add(enginecore.DefaultMaxExpansionBytes+1) == nil {
		t.Error("nil budget")
	}
	if err := none.TooDeep(24); err.Error() != "maxExpansionDepth exceeded: the expansion needs more than 8 rounds (24 configured), the limit is 8" {
		t.Errorf("TooDeep: %v", err)
	}
}

// TestEachRunHasItsBudget: the engine gives every run a fresh budget of
// its limits, whatever the caller's context carries.
func TestEachRunHasItsBudget(t *testing.T) {
	spend := enginecore.NewFunc("spend", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		if err := pc.Budget.Add(70); err != nil {
			return nil, err
		}
		return pc.Derive(), nil
	})
	e := enginecore.New(enginecore.WithProcessors(spend), enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 100}))
	spent := enginecore.NewBudget(enginecore.Limits{MaxExpansionBytes: 1})
	for range 3 {
		if _, err := e.ProcessContext(context.Background(), &enginecore.PipelineContext{Budget: spent}); err != nil {
			t.Fatal(err)
		}
	}
	twice := enginecore.New(enginecore.WithProcessors(spend, enginecore.NewFunc("again", spend.Process)), enginecore.WithLimits(enginecore.Limits{MaxExpansionBytes: 100}))
	_, err := twice.Process(context.Background(), nil)
	var pe *enginecore.PipelineError
	if !errors.As(err, &pe) || pe.Processor != "again" || !errors.Is(err, enginecore.ErrLimitExceeded) {
		t.Fatalf("second spend of 70 in 100: %v", err)
	}
}
