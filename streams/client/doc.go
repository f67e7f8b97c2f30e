// Package client is convstream's Go client, for applications that write
// conversations and read them back: Send publishes message events to the
// events stream, Snapshot and Watch read a conversation's stored flatList
// snapshot, Deltas and Follow keep a live View of it, Infer asks a worker
// for a conversation's model-ready context, Doctor for a diagnosis, and
// Errors reads the rejections and failures recorded for a conversation.
// It depends on the wire contract (package streams) and nats.go only.
package client
