// Package streams is convstream's wire: the CloudEvents it reads and writes,
// the NATS subjects they travel on, the JetStream stream, consumer and
// key-value bucket that hold them, and the worker that turns message events
// into live conversation snapshots and answers inference requests.
//
// The worker moves each event through decode → validate → apply → publish
// (one file each). Rejection, tracing, metrics and panic recovery wrap those
// stages from outside as middleware, in the manner of Watermill's router.
// Events of one conversation are applied one at a time, in stream order, on
// one of a fixed set of lanes chosen by hashing the conversation id.
//
// State lives in JetStream: the events stream is the source of truth and the
// snapshot bucket records, per conversation, the last stream sequence whose
// effect was stored. A worker keeps recently used conversations in memory and
// rebuilds any other by replaying that conversation's events, from its
// checkpoint (its messages as a worker last let go of it, in a bucket of
// their own) when it has one; see docs/events.md for the contract and the
// reasoning.
package streams
