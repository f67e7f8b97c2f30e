package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Deltas sends every snapshot delta published for a conversation from now
// on, until ctx ends; the channel is closed then. Events that are not
// deltas (or not readable) are skipped. Core NATS: a slow reader misses
// deltas, which a follower notices as a version gap.
func (c *Client) Deltas(ctx context.Context, conversationID string) (<-chan *SnapshotDelta, error) {
	msgs := make(chan *nats.Msg, 1024)
	sub, err := c.nc.ChanSubscribe(c.subjects.Snapshots(conversationID), msgs)
	if err != nil {
		return nil, fmt.Errorf("streams: subscribe to snapshots of %s: %w", conversationID, err)
	}
	if err := c.nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("streams: subscribe to snapshots of %s: %w", conversationID, err)
	}
	out := make(chan *SnapshotDelta)
	go func() {
		defer close(out)
		defer func() { _ = sub.Unsubscribe() }()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-msgs:
				ev, err := DecodeEvent(m.Header, m.Data)
				if err != nil || ev.Type() != TypeSnapshotDelta {
					continue
				}
				var d SnapshotDelta
				if json.Unmarshal(ev.Data(), &d) != nil {
					continue
				}
				select {
				case out <- &d:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// Follow sends the flat list of a conversation as it changes: the stored
// snapshot (when there is one), then the view after every delta, until ctx
// ends; the channel is closed then. On a gap (a delta whose base is not
// the view's version) it reloads the stored snapshot, waiting up to
// resync for the bucket to catch up with the delta.
func (c *Client) Follow(ctx context.Context, conversationID string, resync time.Duration) (<-chan *View, error) {
	deltas, err := c.Deltas(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	out := make(chan *View)
	go func() {
		defer close(out)
		send := func(v *View) bool {
			cp := *v
			select {
			case out <- &cp:
				return true
			case <-ctx.Done():
				return false
			}
		}
		view := &View{ConversationID: conversationID}
		if v, err := c.storedView(ctx, conversationID); err == nil {
			view = v
			if !send(view) {
				return
			}
		}
		for d := range deltas {
			if d.Version <= view.Version {
				continue // stale: the stored snapshot covers it
			}
			if !view.Apply(d) {
				v, err := c.awaitView(ctx, conversationID, d.Version, resync)
				if err != nil || v.Version <= view.Version {
					continue
				}
				view = v
			}
			if !send(view) {
				return
			}
		}
	}()
	return out, nil
}

// storedView reads the stored snapshot of a conversation as a View.
func (c *Client) storedView(ctx context.Context, conversationID string) (*View, error) {
	s, err := c.Snapshot(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return ViewOf(s)
}

// awaitView reads the stored snapshot until it reaches version, for at most
// wait; it returns the last one read.
func (c *Client) awaitView(ctx context.Context, conversationID string, version uint64, wait time.Duration) (*View, error) {
	deadline := time.Now().Add(wait)
	for {
		v, err := c.storedView(ctx, conversationID)
		if err != nil && !errors.Is(err, ErrUnknownConversation) {
			return nil, err
		}
		if (err == nil && v.Version >= version) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
