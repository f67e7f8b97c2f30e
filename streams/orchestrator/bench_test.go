package orchestrator

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
)

// BenchmarkChunkOverhead measures the orchestrator's own work per delta a
// model writes (an op is one delta of 4 characters): "writer" is the
// writer alone, one chunk a delta (keeping the reply, handing the chunk to
// its sender; the send does nothing); "stored-one-per-chunk" adds encoding
// each chunk as a CloudEvent and storing it in JetStream through the Go
// client, waiting for its acknowledgement, on an embedded server in the
// same process; "stored-burst" has the model write faster than chunks are
// stored, so that deltas join the next chunk (chunks/op: chunks a delta
// cost).
func BenchmarkChunkOverhead(b *testing.B) {
	delta := models.Delta{Text: "abcd"}
	b.Run("writer", func(b *testing.B) {
		done := make(chan struct{}, 1)
		w := newWriter(context.Background(), "a1", 0, func(context.Context, streams.MessageChunk) error { done <- struct{}{}; return nil }, func(error) {})
		b.ReportAllocs()
		for b.Loop() {
			if err := w.add(delta); err != nil {
				b.Fatal(err)
			}
			<-done
		}
		if err := w.close(); err != nil {
			b.Fatal(err)
		}
	})
	// A burst: the model writes faster than chunks are stored.
	b.Run("stored-burst", func(b *testing.B) {
		ns := workertest.Server(b, natsembed.Config{})
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		c, err := client.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: "CHUNKS", Subjects: []string{c.Subjects().AllChunks()}}); err != nil {
			b.Fatal(err)
		}
		sent := 0
		w := newWriter(ctx, "a1", 0, func(ctx context.Context, chunk streams.MessageChunk) error {
			sent++
			_, err := c.SendChunk(ctx, "bench", chunk)
			return err
		}, func(err error) { b.Error(err) })
		b.ReportAllocs()
		for b.Loop() {
			if err := w.add(delta); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(sent)/float64(b.N), "chunks/op")
	})
	// One chunk a delta: the model writes no faster than chunks are
	// stored, as every real model does (tens of deltas a second).
	b.Run("stored-one-per-chunk", func(b *testing.B) {
		ns := workertest.Server(b, natsembed.Config{})
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		c, _ := client.New(nc)
		ctx := context.Background()
		if _, err := c.JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: "CHUNKS", Subjects: []string{c.Subjects().AllChunks()}}); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{}, 1)
		w := newWriter(ctx, "a1", 0, func(ctx context.Context, chunk streams.MessageChunk) error {
			_, err := c.SendChunk(ctx, "bench", chunk)
			done <- struct{}{}
			return err
		}, func(err error) { b.Error(err) })
		b.ReportAllocs()
		for b.Loop() {
			if err := w.add(delta); err != nil {
				b.Fatal(err)
			}
			<-done
		}
		if err := w.close(); err != nil {
			b.Fatal(fmt.Errorf("close: %w", err))
		}
	})
}
