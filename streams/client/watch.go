package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go"
)

// Watch sends the stored snapshot of a conversation (when there is one)
// and then every newer one written, until ctx ends; the channel is closed
// then.
//
// It follows the key's subject (streams.Subjects.SnapshotKey) with a core
// subscription, made before the first read, so no write falls between
// the two: it creates no consumer, and a ui user needs no right to create
// one (streams.UIClientPermissions). Core NATS keeps nothing for a
// disconnected client, so the stored snapshot is read again after every
// reconnect. Versions only go forward: a write older than the one sent
// last is skipped, and a fast run of writes may arrive as its latest. A
// value that is not a snapshot this release reads (malformed, or of a
// newer format) is skipped.
func (c *Client) Watch(ctx context.Context, conversationID string) (<-chan *streams.Snapshot, error) {
	if err := checkConversationID(conversationID); err != nil {
		return nil, err
	}
	// The handler keeps the latest write only, so a slow reader of the
	// channel costs the connection nothing and misses no final state.
	var (
		mu     sync.Mutex
		latest *nats.Msg
		wake   = make(chan struct{}, 1)
	)
	sub, err := c.nc.Subscribe(c.subjects.SnapshotKey(conversationID), func(m *nats.Msg) {
		mu.Lock()
		latest = m
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("client: watch %s: %w", conversationID, err)
	}
	if err := c.nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("client: watch %s: %w", conversationID, err)
	}
	reconnects := c.nc.StatusChanged(nats.CONNECTED)
	out := make(chan *streams.Snapshot)
	go func() {
		defer close(out)
		listener := reconnects
		defer func() { _ = sub.Unsubscribe(); c.nc.RemoveStatusListener(listener) }()
		var last uint64 // the version sent last
		send := func(s *streams.Snapshot) bool {
			if s.Version <= last {
				return true
			}
			select {
			case out <- s:
				last = s.Version
				return true
			case <-ctx.Done():
				return false
			}
		}
		read := func() bool {
			s, err := c.Snapshot(ctx, conversationID)
			if err != nil {
				return ctx.Err() == nil // absent or unreadable now: the next write brings it
			}
			return send(s)
		}
		if !read() {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-reconnects:
				if !ok {
					reconnects = nil // the connection closed: no reconnect to wait for
					continue
				}
				if !read() {
					return
				}
			case <-wake:
				mu.Lock()
				m := latest
				latest = nil
				mu.Unlock()
				if m == nil {
					continue
				}
				if m.Header.Get(streams.KVOperationHeader) != "" {
					last = 0 // erased: what comes next is a new conversation
					continue
				}
				s, err := decodeSnapshot(m.Data)
				if err != nil {
					continue // not a snapshot this release reads
				}
				if !send(s) {
					return
				}
			}
		}
	}()
	return out, nil
}
