// Package client is convstream's Go client, for applications that write
// conversations and read them back: Send publishes message events to the
// events stream, Snapshot and Watch read a conversation's stored flatList
// snapshot, Deltas and Follow keep a live View of it, Infer asks a worker
// for a conversation's model-ready context, Doctor for a diagnosis, and
// Errors reads the rejections and failures recorded for a conversation.
//
// It depends on the wire contract (package streams), nats.go, the
// CloudEvents SDK and the OpenTelemetry API (TestClientDependencies).
// The contract in turn compiles the domain packages its payloads are made
// of and whose checks it shares with the worker: conversation (a message,
// a diagnosis, the decoding and checks of event data, so that CheckEvent
// refuses what the worker would), enginecore and providers (the messages,
// stats, usage, cache breakpoints and model profile of an inference
// context or request) and, through providers, processors and
// internal/jsvalue. None of them touches NATS or the network; keeping the
// contract free of them would take a second copy of each of those types
// and of the checks, kept in step by hand.
package client
