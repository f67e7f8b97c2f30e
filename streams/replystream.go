package streams

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RepliesStreamConfig is the replies stream of the subjects s: a work
// queue of reply requests, each taken by one orchestrator. The worker
// creates it when it provisions, so that an orchestrator needs no right
// to create or change streams (OrchestratorPermissions).
func RepliesStreamConfig(s Subjects) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        s.RepliesStream(),
		Description: "convstream: reply requests, each taken by one orchestrator",
		Subjects:    []string{s.AllReplies()},
		Retention:   jetstream.WorkQueuePolicy,
		// A request nobody took within a day is no longer wanted.
		MaxAge:     24 * time.Hour,
		Duplicates: 2 * time.Minute,
	}
}
