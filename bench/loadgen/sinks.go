package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// workerSink publishes on the events subjects of a convstream worker and
// hears back its snapshot deltas: event k of a new conversation is version
// k+1.
type workerSink struct {
	nc       *nats.Conn // its own connection, for the deltas
	subjects streams.Subjects
	run      string
	sub      *nats.Subscription
}

func (s *workerSink) conversationID(conv int) string { return s.run + "-" + strconv.Itoa(conv) }

func (s *workerSink) subject(conv int) string { return s.subjects.Events(s.conversationID(conv)) }

func (s *workerSink) start(_ context.Context, got func(conv, k int)) error {
	prefix := s.subjects.Snapshots(s.run + "-")
	// Event k of a conversation appends message k to a user/assistant
	// chain, so the flat list its delta leads to has k+1 entries (versions
	// are stream sequences and say nothing of k).
	marker := []byte(`"length":`)
	sub, err := s.nc.Subscribe(s.subjects.Snapshots("*"), func(m *nats.Msg) {
		if !strings.HasPrefix(m.Subject, prefix) {
			return
		}
		conv, err := strconv.Atoi(m.Subject[len(prefix):])
		if err != nil {
			return
		}
		i := bytes.Index(m.Data, marker)
		if i < 0 {
			return
		}
		rest := m.Data[i+len(marker):]
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(string(rest[:end]))
		if err != nil || n < 1 {
			return
		}
		got(conv, n-1)
	})
	if err != nil {
		return fmt.Errorf("loadgen: subscribe to deltas: %w", err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	s.sub = sub
	return s.nc.FlushTimeout(5 * time.Second)
}

func (s *workerSink) stop() {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
}

// rawSink is a plain stream and pull consumer: the same payloads published
// and consumed with an ack each, nothing applied.
type rawSink struct {
	js     jetstream.JetStream
	name   string // stream name
	prefix string // subjects prefix.<conv>
	it     jetstream.MessagesContext
	done   chan struct{}
}

func (s *rawSink) subject(conv int) string { return s.prefix + "." + strconv.Itoa(conv) }

func (s *rawSink) start(ctx context.Context, got func(conv, k int)) error {
	stream, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: s.name, Subjects: []string{s.prefix + ".>"}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("loadgen: raw stream: %w", err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "loadgen", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 8192,
	})
	if err != nil {
		return fmt.Errorf("loadgen: raw consumer: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return fmt.Errorf("loadgen: raw consume: %w", err)
	}
	s.it, s.done = it, make(chan struct{})
	counts := map[int]int{}
	go func() {
		defer close(s.done)
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, nats.ErrConnectionClosed) {
				return
			}
			if err != nil {
				continue
			}
			_ = m.Ack()
			subj := m.Subject()
			conv, err := strconv.Atoi(subj[strings.LastIndexByte(subj, '.')+1:])
			if err != nil {
				continue
			}
			// One consumer delivers a subject's messages in order.
			got(conv, counts[conv])
			counts[conv]++
		}
	}()
	return nil
}

func (s *rawSink) stop() {
	if s.it != nil {
		s.it.Stop()
		<-s.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.js.DeleteStream(ctx, s.name)
}
