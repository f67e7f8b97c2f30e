package worker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams/worker/internal/read"
)

// BenchmarkLoad times what a worker taking over conversations from another
// does for each, in a cluster of three servers on loopback with a stream
// and a bucket of three replicas: read the stored snapshot's head, then
// rebuild the conversation from its checkpoint and the events after it.
// The worker's connection is to a server that does not lead the bucket.
// An iteration loads convs conversations of msgs messages; heads read
// from the leader, or as a worker picks (confirmed reads once the
// snapshots read are large, see read.Mode).
func BenchmarkLoad(b *testing.B) {
	servers := natstest.StartCluster(b, 3)
	storage := Storage{StreamReplicas: 3, BucketReplicas: 3}
	ctx := context.Background()
	for _, tc := range []struct{ convs, msgs int }{{64, 8}, {8, 1024}} {
		nc := natstest.Connect(b, servers[0])
		c := natstest.NewClient(b, nc)
		prefix := fmt.Sprintf("ld%d-", tc.msgs)
		last := make([]uint64, tc.convs)
		r := StartWorker(b, nc, WithStorage(storage), WithLogger(natstest.FailureLogger(b, 10)))
		content := strings.Repeat("x", 256)
		live := make([]*conversation.Conversation, tc.convs)
		for k := range live {
			live[k] = conversation.NewConversation()
		}
		for i := range tc.msgs {
			for k := range tc.convs {
				last[k] = sendChainedAs(b, c, live[k], fmt.Sprint(prefix, k), i, []string{"user", "assistant"}[i%2], content).Sequence
			}
		}
		for k := range tc.convs {
			natstest.WaitVersion(b, c, fmt.Sprint(prefix, k), last[k], time.Minute)
		}
		r.Stop(b)
		w := provisionedWorker(b, natstest.Connect(b, r.W.notBucketLeader(b, servers)), WithStorage(storage), WithLogger(natstest.FailureLogger(b, 10)))
		value, _, err := w.reads.Snapshot(ctx, prefix+"0", read.Leader)
		if err != nil {
			b.Fatal(err)
		}
		for _, picked := range []bool{false, true} {
			name := map[bool]string{false: "leader", true: "picked"}[picked]
			b.Run(fmt.Sprintf("convs=%d/msgs=%d/snapshot=%dKiB/heads=%s", tc.convs, tc.msgs, len(value)>>10, name), func(b *testing.B) {
				// Heads from the leader: none is large enough to be read
				// confirmed.
				cfg := w.cfg
				cfg.headsFrom = math.MaxInt64
				if picked {
					cfg.headsFrom = DefaultHeadsConfirmedFrom
				}
				w.reads = read.New(ctx, readConfig(w.nc, cfg, w.stream, w.snapshots.kv))
				loadAll := func() {
					for k := range tc.convs {
						st, skip, err := w.load(ctx, fmt.Sprint(prefix, k), last[k]+1)
						if err != nil || skip || st == nil {
							b.Fatal(st, skip, err)
						}
					}
				}
				loadAll() // and the picker has seen the sizes
				b.ResetTimer()
				for range b.N {
					loadAll()
				}
			})
		}
	}
}
