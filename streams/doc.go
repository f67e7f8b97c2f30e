// Package streams is convstream's wire contract, for anyone who produces or
// consumes its events: the CloudEvents types and their payloads, the NATS
// subjects and JetStream names they travel on (Subjects), the
// CloudEvents–NATS binding and data codecs (EncodeEvent, DecodeEvent,
// DecodeData), the checks an event must pass (CheckEvent) and the codes of
// a rejection (RejectError), trace-context propagation on events, and the
// NATS permissions of each role. It holds no NATS client logic of its own
// beyond Connect; the client is streams/client, the worker streams/worker,
// the embedded server streams/natsembed. docs/events.md describes the
// contract in prose, schemas/ as JSON Schema.
package streams
