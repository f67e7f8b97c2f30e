package worker

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams/worker/internal/read"
)

// DefaultHeadsConfirmedFrom is the mean size of the snapshots read from a
// replicated bucket from which a worker reads their heads confirmed,
// unless WithHeadsConfirmedFrom says otherwise. A confirmed read costs the
// leader get's round trip, without the payload, plus a direct get: in
// BenchmarkReadStored/cluster (three servers on loopback) about 100 µs
// more than a leader get for a snapshot of 4 KiB or none, and 1 ms less at
// 256 KiB, 7 to 9 ms less at 2 MiB, about 3.7 ns a byte. Both costs grow
// with the size alike, so the mean size decides which is cheaper on
// average.
const DefaultHeadsConfirmedFrom = 32 << 10

// readConfig is what a worker of cfg reads over nc (package read): the
// events stream and snapshot bucket Run provisioned, heads confirmed from
// WithHeadsConfirmedFrom.
func readConfig(nc *nats.Conn, cfg config, events jetstream.Stream, bucket jetstream.KeyValue) read.Config {
	return read.Config{Conn: nc, Subjects: cfg.subjects, Partitions: cfg.storage.Partitions,
		Events: events, Bucket: bucket, ConfirmedFrom: cfg.headsFrom}
}
