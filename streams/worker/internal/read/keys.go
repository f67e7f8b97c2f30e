package read

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// Keys reads the values of a KV bucket's keys as the bucket's leader holds
// them. The client library's Get goes to whichever replica answers first,
// and one that lags answers with the value before the last: for the
// checkpoint bucket on a compacted events stream, that is a checkpoint
// whose later events are purged, and a rebuild from it leaves them out
// (TestCheckpointReadsConfirmed, package worker).
type Keys struct {
	r      *Reader // its connection: leaderGet and directGet use no more
	stream string  // the bucket's stream
	prefix string  // a key's subject, before the key
	how    Mode
}

// Keys returns a reader of kv's keys over r's connection (see NewKeys).
func (r *Reader) Keys(ctx context.Context, kv jetstream.KeyValue) *Keys {
	return NewKeys(ctx, r.nc, kv)
}

// NewKeys returns a reader of kv's keys over nc, read as its configuration
// says (see modeOf): Direct from a bucket of one replica that no mirror
// answers for, Confirmed from a replicated one, Leader from one that
// answers no direct gets or whose status cannot be read.
func NewKeys(ctx context.Context, nc *nats.Conn, kv jetstream.KeyValue) *Keys {
	k := &Keys{r: &Reader{nc: nc}, stream: "KV_" + kv.Bucket(), prefix: "$KV." + kv.Bucket() + ".", how: Leader}
	status, err := kv.Status(ctx)
	if err != nil {
		return k
	}
	if info, ok := status.(*jetstream.KeyValueBucketStatus); ok {
		k.how = modeOf(info.StreamInfo().Config)
	}
	return k
}

// Mode returns how k reads.
func (k *Keys) Mode() Mode { return k.how }

// Get returns the value of key and its revision, as the bucket's leader
// holds them; jetstream.ErrKeyNotFound when there is none, or it was
// deleted or purged.
func (k *Keys) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	m, err := k.r.readLast(ctx, k.stream, k.prefix+key, k.how)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read: %s key %s: %w", k.stream, key, err)
	}
	if op := m.Header.Get(streams.KVOperationHeader); op == "DEL" || op == "PURGE" {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	return m.Data, m.Sequence, nil
}
