package worker

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/natstest"
)

// BenchmarkCompactionRemoval measures what removing the events a
// checkpoint covers costs the process (embedded server included), by
// purging their subject and by deleting them one by one (the purger's
// two ways, consumer_deletes.go), as the number of conversations whose
// events interleave in the stream grows. Each conversation has 60
// events of 600 bytes, published round robin, and loses its first 40:
// cpu-us/removed is the process's CPU time per event removed. The ratio
// of the two at each size is what deleteSpacing rests on. Run it with
// -benchtime 1x.
func BenchmarkCompactionRemoval(b *testing.B) {
	for _, convs := range []int{100, 250, 500, 1000, 4000} {
		for _, how := range []string{"purge", "delete"} {
			b.Run(fmt.Sprintf("conversations=%d/%s", convs, how), func(b *testing.B) {
				for range b.N {
					removalRun(b, convs, how)
				}
			})
		}
	}
}

func removalRun(b *testing.B, convs int, how string) {
	b.StopTimer()
	const events, removed = 60, 40
	ns := natstest.StartServer(b, "")
	nc := natstest.Connect(b, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REMOVAL", Subjects: []string{"removal.*"}})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 600)
	seqs := make([][]uint64, convs)
	for range events {
		acks := make([]jetstream.PubAckFuture, convs)
		for i := range convs {
			if acks[i], err = js.PublishAsync(fmt.Sprintf("removal.c%d", i), payload); err != nil {
				b.Fatal(err)
			}
		}
		for i, a := range acks {
			select {
			case ack := <-a.Ok():
				seqs[i] = append(seqs[i], ack.Sequence)
			case err := <-a.Err():
				b.Fatal(err)
			case <-time.After(time.Minute):
				b.Fatal("no publish acknowledgement in a minute")
			}
		}
	}
	// No consumer: nothing holds a removal back.
	p := newPurger(stream, 0, nil, func(string) int { return 0 }, slog.New(slog.DiscardHandler))
	cpu0 := cpuTime(b)
	b.StartTimer()
	for i := range convs {
		id := fmt.Sprintf("c%d", i)
		switch how {
		case "purge":
			_, err = p.purge(ctx, id, "removal."+id, seqs[i][removed])
		default:
			err = p.delete(ctx, id, seqs[i][:removed])
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	info, err := stream.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if want := uint64(convs * (events - removed)); info.State.Msgs != want {
		b.Fatalf("%d events left, want %d", info.State.Msgs, want)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(convs*removed), "cpu-us/removed")
}
