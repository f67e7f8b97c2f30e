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
// oldest first, until the request's body counts at most MaxTokens less
// Reserve (BodyTokens: every field the provider reads, ids and tool
// declarations included). A turn is a user message and every message up
// to the next one, so a tool call is never parted from its result. An
// anthropic.messages body's max_tokens is then at most what the window
// leaves: MaxTokens less the body's tokens.
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
	// Tokens is what the request's body counts (BodyTokens), as Counter
	// counts.
	Tokens int `json:"tokens"`
	// Limit is MaxTokens less Reserve.
	Limit int `json:"limit"`
	// DroppedMessages counts the messages left out.
	DroppedMessages int `json:"droppedMessages"`
}

// fit drops the oldest turns of ts until w's body of them fits in b, and
// returns that request. The turns' own counts (turnTokens) choose how many
// to drop at first; the body is then counted whole and, while it is over,
// one more turn goes.
func (b Budget) fit(ts []turn, w writer) (*Request, error) {
	c := b.Counter
	if c == nil {
		c = Estimator{}
	}
	limit := b.MaxTokens - b.Reserve
	cost := make([]int, len(ts))
	sum := 0
	for i, t := range ts {
		cost[i] = turnTokens(t, c)
		sum += cost[i]
	}
	r := w.write(ts)
	total := BodyTokens(r.Body, c)
	// overhead is what the body counts beyond its turns: tool
	// declarations, the format's own turns.
	overhead := max(total-sum, 0)
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
	dropped := 0
	dropTurn := func(k int) {
		end := len(ts)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		for i := starts[k]; i < end; i++ {
			if ts[i].role == "system" || ts[i].role == "developer" {
				continue
			}
			drop[i] = true
			sum -= cost[i]
			dropped++
		}
	}
	k := 0
	for ; k < len(starts)-keep && total > limit && sum+overhead > limit; k++ {
		dropTurn(k)
	}
	for {
		if dropped > 0 {
			kept := make([]turn, 0, len(ts)-dropped)
			for i, t := range ts {
				if !drop[i] {
					kept = append(kept, t)
				}
			}
			r = w.write(kept)
			total = BodyTokens(r.Body, c)
		}
		if total <= limit || k >= len(starts)-keep {
			break
		}
		dropTurn(k)
		k++
	}
	r.Usage = &Usage{Tokens: total, Limit: limit, DroppedMessages: dropped}
	if total > limit {
		return nil, fmt.Errorf("%w: the system messages and the last %d turns count %d tokens, the budget %d (maxTokens %d less reserve %d)",
			ErrOverBudget, keep, total, limit, b.MaxTokens, b.Reserve)
	}
	if n, ok := r.Body["max_tokens"].(int); ok {
		room := b.MaxTokens - total
		if room < 1 {
			return nil, fmt.Errorf("%w: the body counts %d tokens, the whole window (maxTokens %d): no room for max_tokens",
				ErrOverBudget, total, b.MaxTokens)
		}
		r.Body["max_tokens"] = min(n, room)
	}
	return r, nil
}
