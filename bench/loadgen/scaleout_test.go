package loadgen

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// TestScaleOut measures 1, 2 and 3 workers on a 3-node JetStream cluster
// (embedded servers on loopback, R3 stream and buckets, 6 partitions): for
// each count, a fresh cluster, the workers, the partitions spread over them,
// then 1,000 conversations driven flat out and at a fixed rate, with the
// events/s and the append-to-snapshot latencies logged as a table row.
// Everything runs in this one process, on this machine's cores: the figures
// say what spreading costs and buys here, not what separate machines would
// do. It is a measurement, not a check: it runs with CONVSTREAM_SCALEOUT=1
// (make -C bench scale).
func TestScaleOut(t *testing.T) {
	if os.Getenv("CONVSTREAM_SCALEOUT") == "" {
		t.Skip("a measurement: set CONVSTREAM_SCALEOUT=1 (make -C bench scale)")
	}
	const (
		partitions = 6
		convs      = 1000
		events     = 20000
		rate       = 1000
	)
	var rows []string
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("workers-%d", n), func(t *testing.T) {
			servers := natstest.StartCluster(t, 3)
			connect := func(first int) *nats.Conn {
				nc, err := nats.Connect(natstest.ClusterURLs(servers, first), nats.MaxReconnects(-1), nats.DontRandomize())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				return nc
			}
			storage := worker.Storage{StreamReplicas: 3, BucketReplicas: 3, Partitions: partitions}
			workers := make([]*worker.Worker, n)
			for i := range n {
				workers[i], _ = workertest.Run(t, connect(i), worker.WithStorage(storage), worker.WithPinnedTTL(5*time.Second))
			}
			subjects, err := streams.NewSubjects("")
			if err != nil {
				t.Fatal(err)
			}
			pub, sub := connect(0), connect(1)
			ctx := context.Background()

			// Paced traffic until every worker owns its share: a worker
			// learns it owns a partition from the partition's events.
			spread := time.Now()
			for round := 0; ; round++ {
				cfg := Config{Conversations: 200, Events: 400, Rate: 400, ContentBytes: 256, Wait: time.Minute}
				if _, err := Worker(ctx, pub, sub, subjects, fmt.Sprintf("spread%d", round), cfg); err != nil {
					t.Fatalf("spreading: %v", err)
				}
				balanced := true
				for _, w := range workers {
					if len(w.OwnedPartitions()) != partitions/n {
						balanced = false
					}
				}
				if balanced {
					break
				}
				if time.Since(spread) > time.Minute {
					t.Fatal("partitions did not spread over the workers")
				}
			}
			owned := make([]string, n)
			for i, w := range workers {
				owned[i] = fmt.Sprint(w.OwnedPartitions())
			}

			peak, err := Worker(ctx, pub, sub, subjects, "peak", Config{Conversations: convs, Events: events,
				ContentBytes: 256, Wait: 2 * time.Minute, Warmup: true})
			if err != nil {
				t.Fatalf("flat out: %v (%+v)", err, peak)
			}
			paced, err := Worker(ctx, pub, sub, subjects, "paced", Config{Conversations: convs, Events: events / 2,
				Rate: rate, ContentBytes: 256, Wait: 2 * time.Minute, Warmup: true})
			if err != nil {
				t.Fatalf("at %d ev/s: %v (%+v)", rate, err, paced)
			}
			ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
			row := fmt.Sprintf("| %d | %s | %.0f | %s | %s | %s | %s |", n, strings.Join(owned, " "),
				peak.Throughput, ms(peak.P50), ms(peak.P99), ms(paced.P50), ms(paced.P99))
			t.Log(row)
			rows = append(rows, row)
		})
	}
	t.Logf("GOMAXPROCS %d, %s\n| workers | partitions owned | flat-out ev/s | p50 | p99 | p50 at %d ev/s | p99 at %d ev/s |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: |\n%s",
		runtime.GOMAXPROCS(0), runtime.Version(), rate, rate, strings.Join(rows, "\n"))
}
