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

// Where a change goes (for maintainers; not part of the package doc). Files
// are grouped by concern, one prefix each; a file's tests are in its
// x_test.go. TestDocMapListsEveryFile checks that this map names every file.
// Tests that need only the exported API are black-box (package
// worker_test); the helpers every suite shares are internal/natstest's, and
// helpers_test.go has the few that need the worker's types (StartWorker).
//
//   - The Worker, its options and what it reports: worker.go, options.go,
//     limits.go, health.go, metrics.go, writers.go (the background writers
//     the snapshot store and the checkpointer share).
//   - Stages: handler_decode.go (decode, then validate against the
//     contract's streams.CheckEvent), handler_apply.go (handler_undo.go takes
//     an applied event back), handler_publish.go (snapshot deltas:
//     handler_delta.go, handler_envelope.go). The handler and its chain:
//     handler.go; New in worker.go assembles the middleware, each its own
//     constructor with its dependencies: middleware_tracing.go,
//     middleware_measuring.go, middleware_reject.go, middleware_recoverer.go.
//   - Lanes and the conversations they hold: lanes.go, lanes_queue.go,
//     lanes_intake.go. A conversation's state, loading and rebuilding:
//     state.go, state_loadahead.go, state_replay.go, state_eventslost.go
//     (events gone from the stream). The lanes' caches (LRU order, the budget
//     they share, idle sweeps): the internal/convcache package, which holds
//     any Value; state.go has what it asks of a convState (Key, Weight,
//     Settled, Compact), lanes.go configures it.
//   - Snapshots: snapshotStore (store_snapshotstore.go; writes and acks in
//     store_write.go, store_clock.go, store_state.go, store_health.go; the
//     encoding in store_encode.go, store_flatjson.go; limits and refusals in
//     store_limits.go, store_refusal.go, store_degraded.go; the audit of
//     stored snapshots against the events stream in store_audit.go).
//   - Checkpoints: checkpointer (checkpoint_checkpointer.go), their stored
//     form (checkpoint.go); compaction of the events they cover, and the
//     rules that keep rebuilds exact over a compacted stream
//     (checkpoint_compact.go), with the sequences of a conversation's
//     events that let it delete them one by one (checkpoint_seqs.go);
//     which streams may be compacted, as their metadata says
//     (checkpoint_compact_mark.go).
//   - The versions of the stored forms, and forms of a newer release met:
//     version.go.
//   - Reads of what is stored: the internal/read package (reads.go
//     configures it).
//   - Inference and diagnosis: inferenceServer and the Pipelines it runs
//     (inference.go,
//     inference_format.go, inference_reply.go, inference_admission.go,
//     inference_doctor.go, inference_caughtup.go,
//     inference_failure.go, inference_observer.go, inference_reads.go for its
//     reads on the lanes). Streaming replies: live.go (live_orphans.go
//     completes those whose writer went silent while no worker held them).
//   - Consumers and their deliveries: consumer.go, consumer_metrics.go,
//     consumer_ack.go, consumer_inprogress.go, consumer_gaps.go (deliveries
//     lost on the way, and the check that an event is its conversation's next
//     one), consumer_purges.go (the stream's purges, kept below the
//     consumers' acknowledgement floors), consumer_deletes.go (its deletes
//     of compacted events, likewise), consumer_next.go (the wait for
//     the next delivery, bounded so that the pull iterator does not stall).
//   - Reports on the errors stream: reports.go, reports_errorstream.go,
//     reports_deadletter.go.
//   - Partitions and their owners: partition_ownership.go,
//     partition_puller.go, partition_members.go, partition_metrics.go.
//   - Erasing a conversation everywhere: the eraser (erase.go), which
//     drops it from every worker's memory and deletes it securely from
//     every stream and bucket.
//   - Provisioning: provision.go, provision_replies.go, provision_setup.go,
//     provision_settings.go (shared settings: refused when they differ, or
//     reconciled), provision_watches.go (how long a consumer on the
//     snapshot bucket lives unused).
