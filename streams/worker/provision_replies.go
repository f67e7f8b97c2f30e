package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// provisionReplies creates the replies stream (streams.RepliesStreamConfig)
// unless it exists, with the events stream's replicas and placement, and
// its consumer (provisionRepliesConsumer): the orchestrators consume from
// it but may create neither (streams.OrchestratorPermissions). An
// existing one is left as it is.
func provisionReplies(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage, log *slog.Logger) error {
	want := streams.RepliesStreamConfig(s)
	events := st.streamConfig(s)
	want.Replicas, want.Placement = events.Replicas, events.Placement
	stream, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, want.Name) // another worker, or an orchestrator, was first
		}
	}
	if err != nil {
		return fmt.Errorf("worker: replies stream %s: %w", want.Name, err)
	}
	return provisionRepliesConsumer(ctx, stream, log)
}

// provisionRepliesConsumer creates the orchestrators' durable pull
// consumer (streams.RepliesConsumer, with the default settings, which an
// orchestrator sets to its own when it starts) unless it exists. The
// replies stream is a work queue, which takes a single consumer without a
// filter: once this one exists, nobody can make another there, and so
// nobody allowed to create consumers can have the stream deliver its
// requests onto another subject of the account (a push consumer's
// delivery subject is checked by no permission), nor take them from the
// orchestrators. An orchestrator of an earlier release may have made a
// consumer of another name, or a user a push one: the worker says so and
// goes on (TestOrchestratorMakesNoOtherConsumer).
func provisionRepliesConsumer(ctx context.Context, stream jetstream.Stream, log *slog.Logger) error {
	name := stream.CachedInfo().Config.Name
	cons, err := stream.Consumer(ctx, streams.RepliesConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = stream.CreateConsumer(ctx, streams.RepliesConsumerConfig(streams.RepliesConsumer,
			streams.DefaultRepliesAckWait, streams.DefaultRepliesMaxDeliver))
		switch {
		case errors.Is(err, jetstream.ErrConsumerExists):
			cons, err = stream.Consumer(ctx, streams.RepliesConsumer) // another worker was first
		case streams.IsRepliesConsumerTaken(err):
			log.WarnContext(ctx, "the replies stream has another consumer, which takes the reply requests: orchestrators using "+
				streams.RepliesConsumer+" cannot start until it is deleted", "stream", name, "err", err)
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("worker: replies consumer %s on %s: %w", streams.RepliesConsumer, name, err)
	}
	if deliver := cons.CachedInfo().Config.DeliverSubject; deliver != "" {
		log.WarnContext(ctx, "the replies consumer is a push consumer: it delivers reply requests to its subject, and orchestrators cannot pull from it; delete it",
			"stream", name, "consumer", streams.RepliesConsumer, "deliver", deliver)
	}
	return nil
}
