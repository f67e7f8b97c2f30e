package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
)

// Deltas sends every snapshot delta published for a conversation from now
// on, until ctx ends; the channel is closed then. Events that are not
// deltas (or not readable) are skipped. Core NATS: a slow reader misses
// deltas, which a follower notices as a version gap.
func (c *Client) Deltas(ctx context.Context, conversationID string) (<-chan *streams.SnapshotDelta, error) {
	if err := checkConversationID(conversationID); err != nil {
		return nil, err
	}
	msgs := make(chan *nats.Msg, 1024)
	sub, err := c.nc.ChanSubscribe(c.subjects.Snapshots(conversationID), msgs)
	if err != nil {
		return nil, fmt.Errorf("client: subscribe to snapshots of %s: %w", conversationID, err)
	}
	if err := c.nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("client: subscribe to snapshots of %s: %w", conversationID, err)
	}
	out := make(chan *streams.SnapshotDelta)
	go func() {
		defer close(out)
		defer func() { _ = sub.Unsubscribe() }()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-msgs:
				ev, err := streams.DecodeEvent(m.Header, m.Data)
				if err != nil || ev.Type() != streams.TypeSnapshotDelta {
					continue
				}
				var d streams.SnapshotDelta
				if json.Unmarshal(ev.Data(), &d) != nil {
					continue
				}
				d.FillAppend(conversationID)
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

// followRereads is how many times Follow reads the stored snapshot again
// while no delta comes.
const followRereads = 4

// Follow sends the flat list of a conversation as it changes: the stored
// snapshot (when there is one), then the view after every delta, until ctx
// ends; the channel is closed then. On a gap (a delta whose base is not
// the view's version) it goes on from the stored snapshot, waiting up to
// resync for the bucket to catch up with the delta (see awaitView).
//
// The stored snapshot may be behind the deltas sent before Follow
// subscribed (the bucket is up to --snapshot-max-interval behind them),
// and a quiet conversation sends no later delta to reveal the gap: until
// a delta comes it reads the stored snapshot again after resync, then
// after twice that and so on, followRereads times at most, and sends it
// when it is newer than the view.
func (c *Client) Follow(ctx context.Context, conversationID string, resync time.Duration) (<-chan *streams.View, error) {
	deltas, err := c.Deltas(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	out := make(chan *streams.View)
	go func() {
		defer close(out)
		send := func(v *streams.View) bool {
			cp := *v
			select {
			case out <- &cp:
				return true
			case <-ctx.Done():
				return false
			}
		}
		view := &streams.View{ConversationID: conversationID}
		if v, err := c.storedView(ctx, conversationID); err == nil {
			view = v
			if !send(view) {
				return
			}
		}
		wait, rereads := resync, 0
		again := time.NewTimer(wait)
		defer again.Stop()
		for {
			var d *streams.SnapshotDelta
			select {
			case <-again.C:
				if v, err := c.storedView(ctx, conversationID); err == nil && v.Version > view.Version {
					view = v
					if !send(view) {
						return
					}
				}
				if rereads++; rereads < followRereads {
					wait *= 2
					again.Reset(wait)
				}
				continue
			case next, ok := <-deltas:
				if !ok {
					return
				}
				d = next
				again.Stop()
			}
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
func (c *Client) storedView(ctx context.Context, conversationID string) (*streams.View, error) {
	s, err := c.Snapshot(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return streams.ViewOf(s)
}

// awaitView waits up to wait for the stored snapshot to reach version and
// returns it, or the last one stored by then. It watches the key rather
// than reading it again and again: a follower that missed a delta of a
// busy conversation waits for the bucket, which is up to
// --snapshot-max-interval behind the deltas, and polling would read the
// whole snapshot every few milliseconds meanwhile.
func (c *Client) awaitView(parent context.Context, conversationID string, version uint64, wait time.Duration) (*streams.View, error) {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	snapshots, err := c.Watch(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	var last *streams.View
	for s := range snapshots {
		v, err := streams.ViewOf(s)
		if err != nil {
			continue
		}
		if last = v; v.Version >= version {
			return v, nil
		}
	}
	// The watch ended: the wait is over (or the server ended the watch),
	// or the follower's own context ended.
	if err := parent.Err(); err != nil {
		return nil, err
	}
	if last == nil {
		return nil, fmt.Errorf("%w: %s", streams.ErrUnknownConversation, conversationID)
	}
	return last, nil
}
