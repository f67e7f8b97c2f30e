package worker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// DefaultStoreStallLimit is how long snapshot writes may all fail before
// the worker reports itself not ready (see WithStoreStallLimit). A failed
// write is retried after up to 5 s, so a minute is a dozen tries or more.
const DefaultStoreStallLimit = time.Minute

// storeHealth follows whether the worker's snapshot writes succeed. Its
// methods are safe for concurrent use: the lanes report, Ready reads.
type storeHealth struct {
	// failingSince is when the first write failed since the last one that
	// succeeded, in Unix nanoseconds; 0 while the last write succeeded.
	failingSince atomic.Int64
	failures     atomic.Int64 // writes failed since then
	lastErr      atomic.Pointer[error]
	// full is set while the last write failed for want of room in the
	// server's store: no wait makes that pass, so the worker is not ready
	// at once (TestFullStoreKeepsWorkerUp).
	full atomic.Bool
}

// jsWriteNoRoom is the JetStream API error code of a message the server
// has no room for, its store or the account's limit full
// (JSInsufficientResourcesErr, "insufficient resources").
const jsWriteNoRoom jetstream.ErrorCode = 10023

// storeFull reports whether err is the server's refusal of a write for
// want of room.
func storeFull(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jsWriteNoRoom
}

// succeeded records a write that succeeded.
func (h *storeHealth) succeeded() {
	if h.failingSince.Load() != 0 {
		h.failingSince.Store(0)
		h.failures.Store(0)
		h.full.Store(false)
	}
}

// failed records a write that failed with err at now.
func (h *storeHealth) failed(err error, now time.Time) {
	h.lastErr.Store(&err)
	h.full.Store(storeFull(err))
	h.failures.Add(1)
	h.failingSince.CompareAndSwap(0, now.UnixNano())
}

// check returns an error when writes have failed, none succeeding, for
// longer than limit (0: never), or the last failed for want of room in the
// server's store.
func (h *storeHealth) check(now time.Time, limit time.Duration) error {
	since := h.failingSince.Load()
	full := h.full.Load()
	if since == 0 || limit == 0 && !full {
		return nil
	}
	d := now.Sub(time.Unix(0, since))
	if d <= limit && !full {
		return nil
	}
	var last error
	if p := h.lastErr.Load(); p != nil {
		last = *p
	}
	if d >= time.Second {
		d = d.Round(time.Second)
	} else {
		d = d.Round(time.Millisecond)
	}
	if full {
		return fmt.Errorf("%w: the server's store is full: snapshot writes refused for %v, none stored (%d refused), their events kept in the stream until there is room; last: %w",
			streams.ErrNotReady, d, h.failures.Load(), last)
	}
	return fmt.Errorf("%w: snapshot writes failing for %v, none stored (%d failed); last: %w",
		streams.ErrNotReady, d, h.failures.Load(), last)
}
