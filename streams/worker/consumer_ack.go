package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pendingAck is an applied event awaiting its acknowledgement until a
// stored snapshot covers it (deferAck): the subject JetStream takes its
// acknowledgement on, and nothing else. Holding the message itself kept
// its payload, its headers and nats.go's wrappers, about nine objects an
// event, alive for up to a maximum snapshot interval: at 6,000 events a
// second with --snapshot-max-interval 5s, a fifth of the worker process's
// heap objects, which every collection marks (BENCHMARKS.md).
type pendingAck string

// pendingAckOf returns what m's acknowledgement needs.
func pendingAckOf(m jetstream.Msg) pendingAck { return pendingAck(m.Reply()) }

// ackBody is the body of an acknowledgement, as nats.go's jetstream.Msg
// sends it.
var ackBody = []byte("+ACK")

// ackAll acknowledges the events acks on nc, each as jetstream.Msg.Ack
// does.
func ackAll(ctx context.Context, nc *nats.Conn, log *slog.Logger, acks []pendingAck) {
	for _, a := range acks {
		if err := a.publish(nc, ackBody); err != nil {
			log.WarnContext(ctx, "acknowledging event", "ack_subject", string(a), "err", err)
		}
	}
}

// nakAll asks on nc for the events acks again after the first backoff, as
// jetstream.Msg.NakWithDelay does.
func nakAll(nc *nats.Conn, acks []pendingAck) {
	body := nakBody(backoff(1))
	for _, a := range acks {
		_ = a.publish(nc, body)
	}
}

// nakBody is the body of a negative acknowledgement asking for redelivery
// after delay.
func nakBody(delay time.Duration) []byte {
	return fmt.Appendf(nil, `-NAK {"delay": %d}`, delay.Nanoseconds())
}

// ackAll acknowledges the events acks, which the worker no longer holds.
func (w *Worker) ackAll(ctx context.Context, acks []pendingAck) {
	for _, a := range acks {
		w.progress.settled(a)
	}
	ackAll(ctx, w.nc, w.cfg.logger, acks)
}

// nakAll hands the events acks back (see nakAll), which the worker no
// longer holds.
func (w *Worker) nakAll(acks []pendingAck) {
	for _, a := range acks {
		w.progress.settled(a)
	}
	nakAll(w.nc, acks)
}

// settled forgets m, acknowledged, terminated or handed back, in the
// worker's books of what it holds (see inProgress).
func (w *Worker) settled(m jetstream.Msg) { w.progress.settled(pendingAckOf(m)) }

func (a pendingAck) publish(nc *nats.Conn, body []byte) error {
	if a == "" {
		return jetstream.ErrMsgNoReply
	}
	return nc.Publish(string(a), body)
}
