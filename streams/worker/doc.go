// Package worker is convstream's stream processor, for programs that run
// one (cmd/worker is such a program): a Worker consumes message events from
// the JetStream events stream, keeps each conversation's tree, stores its
// flatList snapshot in a key-value bucket, publishes snapshot deltas for
// live UIs, answers inference and diagnosis requests, and reports what it
// refuses on the errors stream. New takes functional options (lanes, cache,
// limits, storage, telemetry, pipelines); Run runs it until its context
// ends; Ready, Live and HealthHandler report its health.
//
// Each event moves through decode → validate → apply → publish (a file
// each); rejection, tracing, metrics and panic recovery wrap those stages
// from outside as middleware. Events of one conversation are applied one at
// a time, in stream order, on one of a fixed set of lanes chosen by hashing
// the conversation id. The events stream is the source of truth; the
// snapshot bucket records, per conversation, the last stream sequence whose
// effect was stored, and a conversation not in memory is rebuilt from its
// checkpoint and the events after it. docs/events.md gives the reasoning.
package worker

// Where a change goes (for maintainers; not part of the package doc):
//
//   - Stages, one file each: decode.go, validate.go (the contract's
//     streams.CheckEvent), apply.go, publish.go (snapshot deltas,
//     envelope.go). The handler and its chain: handler.go; New in worker.go
//     assembles the middleware, each its own constructor with its
//     dependencies: tracing.go, measuring.go, reject.go, recoverer.go.
//   - Lanes and the conversations they hold: lanes.go, lanequeue.go,
//     intake.go, state.go (convState, loading and rebuilding: loadahead.go,
//     replay.go). Deliveries lost on the way, and the check that an event
//     is its conversation's next one: gaps.go. The lanes' caches (LRU order, the budget they share,
//     idle sweeps): the internal/convcache package, which holds any Value;
//     cachevalue.go is what it asks of a convState, lanes.go configures it.
//   - Snapshots: snapshotStore (snapshotstore.go; writes and acks in
//     store.go, storeclock.go, storestate.go, storehealth.go; limits and
//     refusals in snapshotlimits.go, storerefusal.go, degraded.go).
//   - Checkpoints: checkpointer (checkpointer.go), their stored form
//     (checkpoint.go).
//   - Reads of what is stored: the internal/read package (reads.go
//     configures it).
//   - Inference and diagnosis: inferenceServer (inference.go,
//     inference_format.go, inference_reply.go, doctor.go, caughtup.go,
//     requestreads.go for its reads on the lanes).
//   - Reports on the errors stream: reports.go, errorstream.go,
//     deadletter.go. Partitions and their owners: ownership.go, puller.go,
//     members.go, partition.go. Provisioning: provision.go, consumer.go.
