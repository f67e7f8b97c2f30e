package providers

import (
	"errors"
	"fmt"
)

// ErrOverBudget is returned when what a Budget must keep does not fit in
// it.
var ErrOverBudget = errors.New("providers: context over its token budget")

// A Budget bounds a request by tokens. The system and developer messages
// and the last KeepTurns turns are always kept; older turns are dropped,
// oldest first, until the request fits in MaxTokens less Reserve. A turn is
// a user message and every message up to the next one, so a tool call is
// never parted from its result. Build applies it after normalising, before
// writing the format.
type Budget struct {
	// MaxTokens is the model's context window, in tokens.
	MaxTokens int
	// Reserve is what is kept free for the reply.
	Reserve int
	// KeepTurns is how many of the last turns are kept whatever they cost
	// (at least 1: the request's question).
	KeepTurns int
	// Counter counts tokens; nil means Estimator.
	Counter Counter
}

// Check reports what is wrong with b.
func (b Budget) Check() error {
	switch {
	case b.MaxTokens <= 0:
		return fmt.Errorf("budget.maxTokens: must be positive, got %d", b.MaxTokens)
	case b.Reserve < 0 || b.Reserve >= b.MaxTokens:
		return fmt.Errorf("budget.reserve: must be at least 0 and below maxTokens (%d), got %d", b.MaxTokens, b.Reserve)
	case b.KeepTurns < 0:
		return fmt.Errorf("budget.keepTurns: must not be negative, got %d", b.KeepTurns)
	}
	return nil
}

// Usage says what a budget did.
type Usage struct {
	// Tokens is what the request's messages count, as Counter counts.
	Tokens int `json:"tokens"`
	// Limit is MaxTokens less Reserve.
	Limit int `json:"limit"`
	// DroppedMessages counts the messages left out.
	DroppedMessages int `json:"droppedMessages"`
}

// fit drops the oldest turns of ts until they fit in b.
func (b Budget) fit(ts []turn) ([]turn, Usage, error) {
	c := b.Counter
	if c == nil {
		c = Estimator{}
	}
	limit := b.MaxTokens - b.Reserve
	cost := make([]int, len(ts))
	total := 0
	for i, t := range ts {
		cost[i] = turnTokens(t, c)
		total += cost[i]
	}
	u := Usage{Tokens: total, Limit: limit}
	if total <= limit {
		return ts, u, nil
	}
	// starts[k] is where the k-th turn begins: at each user message, and
	// at 0 for what comes before the first one.
	var starts []int
	for i, t := range ts {
		if i == 0 || t.role == "user" {
			starts = append(starts, i)
		}
	}
	keep := max(b.KeepTurns, 1)
	drop := make([]bool, len(ts))
	for k := 0; k < len(starts)-keep && total > limit; k++ {
		end := len(ts)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		for i := starts[k]; i < end; i++ {
			if ts[i].role == "system" || ts[i].role == "developer" {
				continue
			}
			drop[i] = true
			total -= cost[i]
			u.DroppedMessages++
		}
	}
	u.Tokens = total
	if total > limit {
		return nil, u, fmt.Errorf("%w: the system messages and the last %d turns count %d tokens, the budget %d (maxTokens %d less reserve %d)",
			ErrOverBudget, keep, total, limit, b.MaxTokens, b.Reserve)
	}
	out := make([]turn, 0, len(ts)-u.DroppedMessages)
	for i, t := range ts {
		if !drop[i] {
			out = append(out, t)
		}
	}
	return out, u, nil
}
