package models

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/convstream/convstream/providers"
)

// The defaults of Retry.
const (
	DefaultRetries       = 3
	DefaultRetryDelay    = 500 * time.Millisecond
	DefaultRetryMaxDelay = 8 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After honoured: a provider
	// asking for more fails the call at once.
	DefaultMaxRetryAfter = 30 * time.Second
)

// Retry says how a call the provider refused with 429 or 5xx is tried
// again: up to Retries more times, waiting Delay, then twice as long each
// time up to MaxDelay, each wait shortened by up to a quarter at random
// so that many callers refused at once do not come back at once. When the
// provider says how long to wait (Retry-After, retry-after-ms), the wait
// is at least that, up to MaxRetryAfter; a provider asking for longer, or
// for longer than the call's context has left, fails the call at once
// with its refusal, since a retry sooner would be refused again
// (MaxRetryAfter 0: MaxDelay).
type Retry struct {
	Retries         int
	Delay, MaxDelay time.Duration
	MaxRetryAfter   time.Duration
}

// DefaultRetry returns the Retry models use unless told otherwise.
func DefaultRetry() Retry {
	return Retry{Retries: DefaultRetries, Delay: DefaultRetryDelay, MaxDelay: DefaultRetryMaxDelay, MaxRetryAfter: DefaultMaxRetryAfter}
}

// wait returns the wait before retry n (0-based).
func (r Retry) wait(n int) time.Duration {
	d := r.Delay
	for range n {
		if d *= 2; d >= r.MaxDelay {
			d = r.MaxDelay
			break
		}
	}
	if d <= 0 {
		return 0
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// retrying is a Model whose refused calls are tried again.
type retrying struct {
	Model
	retry Retry
}

// WithRetries returns m with its calls tried again as r says. A call is
// tried again only while nothing of its reply was emitted: a retry after
// that would write the reply twice.
func WithRetries(m Model, r Retry) Model {
	if r.Retries <= 0 {
		return m
	}
	return &retrying{Model: m, retry: r}
}

func (m *retrying) Format() providers.Format { return m.Model.Format() }

func (m *retrying) Stream(ctx context.Context, req Request, emit func(Delta) error) (*Result, error) {
	for n := 0; ; n++ {
		emitted := false
		res, err := m.Model.Stream(ctx, req, func(d Delta) error {
			emitted = true
			return emit(d)
		})
		var e *Error
		if err == nil || emitted || n >= m.retry.Retries || !errors.As(err, &e) || !e.Retryable() {
			return res, err
		}
		wait := m.retry.wait(n)
		if e.RetryAfter > 0 {
			limit := m.retry.MaxRetryAfter
			if limit <= 0 {
				limit = m.retry.MaxDelay
			}
			if e.RetryAfter > limit {
				return res, err
			}
			wait = max(wait, e.RetryAfter)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return res, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
