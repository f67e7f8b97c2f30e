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
