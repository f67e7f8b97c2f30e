package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/streams"
)

// provisionReplies creates the replies stream (streams.RepliesStreamConfig)
// unless it exists, with the events stream's replicas and placement: the
// orchestrators consume from it but may not create it
// (streams.OrchestratorPermissions). An existing one is left as it is.
func provisionReplies(ctx context.Context, js jetstream.JetStream, s streams.Subjects, st Storage) error {
	want := streams.RepliesStreamConfig(s)
	events := st.streamConfig(s)
	want.Replicas, want.Placement = events.Replicas, events.Placement
	_, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another worker, or an orchestrator, was first
		}
	}
	if err != nil {
		return fmt.Errorf("worker: replies stream %s: %w", want.Name, err)
	}
	return nil
}
