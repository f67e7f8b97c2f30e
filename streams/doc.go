// Package streams is convstream's wire contract, for anyone who produces
// or consumes its events: the CloudEvents types (Types) and their
// payloads, the NATS subjects and JetStream names they travel on
// (Subjects), the
// CloudEvents–NATS binding and data codecs (EncodeEvent, DecodeEvent,
// DecodeData), the checks an event must pass (CheckEvent), the codes of
// a rejection (RejectCodes, RejectError, RejectionOf) and of a pipeline
// failure (FailureCodes), trace-context propagation on events, and the
// NATS permissions of each role. It holds no NATS client logic of its own
// beyond Connect; the client is streams/client, the worker streams/worker,
// the embedded server streams/natsembed. docs/events.md describes the
// contract in prose, schemas/ as JSON Schema; TestContractLists and
// TestTypesListed hold them, and the TypeScript client's generated types,
// to this package's lists.
//
// Where a change of the contract goes:
//   - a rejection code: a constant and a row of rejectCodes in codes.go
//     (whether it degrades its conversation is that row's), the enum of
//     schemas/convstream.event.rejected.v1.json, a row of docs/events.md's
//     Rejections table, `npm run gen:types` in clients/typescript;
//     TestContractLists fails until all four agree. A pipeline-failure
//     code likewise, in failureCodes and convstream.pipeline.failed.v1.
//   - an error that stands for a code: conversationCodes in codes.go
//     (RejectionOf, TestRejectionOf).
//   - an event type: a constant and a row of eventTypes in eventtypes.go,
//     its schema in schemas/ named by the type, docs/events.md, then
//     `npm run gen:types` (the TypeScript TYPES) and `make ui` (the viewer
//     bundle digests the client's sources); TestTypesListed fails until
//     they agree.
package streams
