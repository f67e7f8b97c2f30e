package enginecore

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Default limits of a pipeline run.
const (
	// DefaultMaxExpansionBytes bounds what expansions add to one run's
	// messages: 4 MiB.
	DefaultMaxExpansionBytes = 4 << 20
	// DefaultMaxExpansionDepth bounds the rounds of a recursive expansion.
	DefaultMaxExpansionDepth = 8
)

// Names of the limits, as a spec writes them and as a [*LimitError] names
// the one that was hit.
const (
	LimitMaxExpansionBytes = "maxExpansionBytes"
	LimitMaxExpansionDepth = "maxExpansionDepth"
)

// ErrLimitExceeded is matched (errors.Is) by every [*LimitError].
var ErrLimitExceeded = errors.New("pipeline limit exceeded")

// Limits bound the work of one pipeline run, whatever its processors are
// configured to do: a request that may configure processors cannot make a
// run take the worker's memory or time. A zero field means its default.
type Limits struct {
	// MaxExpansionBytes is the most bytes that expanding processors
	// (placeholder variables, templates) may add to the messages of one
	// run, all processors and messages together. What a message already
	// holds is not counted, only what an expansion adds to it.
	MaxExpansionBytes int64 `json:"maxExpansionBytes,omitempty"`
	// MaxExpansionDepth is the most rounds a recursive expansion may take
	// (a variable whose value holds placeholders is one more round).
	MaxExpansionDepth int `json:"maxExpansionDepth,omitempty"`
}

// DefaultLimits returns the limits a run has unless told otherwise.
func DefaultLimits() Limits {
	return Limits{MaxExpansionBytes: DefaultMaxExpansionBytes, MaxExpansionDepth: DefaultMaxExpansionDepth}
}

// withDefaults fills the zero fields of l with the defaults.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxExpansionBytes > 0 {
		d.MaxExpansionBytes = l.MaxExpansionBytes
	}
	if l.MaxExpansionDepth > 0 {
		d.MaxExpansionDepth = l.MaxExpansionDepth
	}
	return d
}

// tighten returns l with each field of other that is set and smaller (or
// that l lacks) taken in its place.
func (l Limits) tighten(other Limits) Limits {
	if other.MaxExpansionBytes > 0 && (l.MaxExpansionBytes <= 0 || other.MaxExpansionBytes < l.MaxExpansionBytes) {
		l.MaxExpansionBytes = other.MaxExpansionBytes
	}
	if other.MaxExpansionDepth > 0 && (l.MaxExpansionDepth <= 0 || other.MaxExpansionDepth < l.MaxExpansionDepth) {
		l.MaxExpansionDepth = other.MaxExpansionDepth
	}
	return l
}

// Validate reports a negative limit.
func (l Limits) Validate() error {
	if l.MaxExpansionBytes < 0 || l.MaxExpansionDepth < 0 {
		return fmt.Errorf("enginecore: limits must not be negative: %+v", l)
	}
	return nil
}

// WithLimits bounds every run of the engine. Limits given several times
// (by the worker's settings and by a pipeline spec, say) combine: the
// smallest value of each wins, so no later option can loosen an earlier
// one. Zero fields leave the limit as it is; unset limits are the defaults
// (DefaultLimits).
func WithLimits(l Limits) Option {
	return func(e *Engine) { e.limits = e.limits.tighten(l) }
}

// LimitError reports a limit a processor would have exceeded. The engine
// wraps it in a [*PipelineError] naming the processor.
type LimitError struct {
	// Limit names the limit: LimitMaxExpansionBytes or LimitMaxExpansionDepth.
	Limit string
	// Max is the limit's value.
	Max int64
	// Want is what the run would have reached: bytes added, or rounds.
	Want int64
}

// Error says which limit and by how much, for example "maxExpansionBytes
// exceeded: the expansion would add 7340032 bytes, the limit is 4194304".
func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitMaxExpansionBytes:
		return fmt.Sprintf("%s exceeded: the expansion would add %d bytes, the limit is %d", e.Limit, e.Want, e.Max)
	case LimitMaxExpansionDepth:
		return fmt.Sprintf("%s exceeded: the expansion needs more than %d rounds (%d configured), the limit is %d", e.Limit, e.Max, e.Want, e.Max)
	}
	return fmt.Sprintf("%s exceeded: %d, the limit is %d", e.Limit, e.Want, e.Max)
}

// Is makes errors.Is(err, ErrLimitExceeded) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// Budget is what one run may still spend. The engine gives every run a
// fresh one (PipelineContext.Budget); a processor that expands text asks
// it for room before building the text and records what it added. A nil
// *Budget stands for the default limits with nothing spent, so a processor
// called outside an engine is bounded too. Safe for concurrent use.
type Budget struct {
	limits Limits
	added  atomic.Int64
}

// NewBudget returns a budget of l, zero fields taking their defaults.
func NewBudget(l Limits) *Budget {
	return &Budget{limits: l.withDefaults()}
}

// Limits returns the limits the budget enforces.
func (b *Budget) Limits() Limits {
	if b == nil {
		return DefaultLimits()
	}
	return b.limits
}

// Room returns how many bytes expansions may still add.
func (b *Budget) Room() int64 {
	if b == nil {
		return DefaultMaxExpansionBytes
	}
	return max(b.limits.MaxExpansionBytes-b.added.Load(), 0)
}

// Add records n bytes added by an expansion, or returns a *LimitError
// (recording nothing) when they do not fit in what is left.
func (b *Budget) Add(n int64) error {
	if n <= 0 {
		return nil
	}
	if b == nil {
		if n > DefaultMaxExpansionBytes {
			return b.TooMuch(n)
		}
		return nil
	}
	for {
		cur := b.added.Load()
		if cur+n > b.limits.MaxExpansionBytes {
			return b.TooMuch(n)
		}
		if b.added.CompareAndSwap(cur, cur+n) {
			return nil
		}
	}
}

// TooMuch returns the error of an expansion that would add n more bytes
// than fit, counting what the run added before.
func (b *Budget) TooMuch(n int64) *LimitError {
	l := b.Limits()
	spent := int64(0)
	if b != nil {
		spent = b.added.Load()
	}
	return &LimitError{Limit: LimitMaxExpansionBytes, Max: l.MaxExpansionBytes, Want: spent + n}
}

// TooDeep returns the error of an expansion configured for rounds rounds
// that still had placeholders to substitute after the depth limit.
func (b *Budget) TooDeep(rounds int) *LimitError {
	return &LimitError{Limit: LimitMaxExpansionDepth, Max: int64(b.Limits().MaxExpansionDepth), Want: int64(rounds)}
}
