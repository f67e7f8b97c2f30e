package streams

// Event types of the contract. Types lists them, and every one has a JSON
// Schema of its data in schemas/ under the type's name (TestTypesListed
// checks that list against the schemas, the Subjects table of
// docs/events.md and the TypeScript client's generated TYPES).
const (
	// TypeMessageAppended carries one message object; id required.
	TypeMessageAppended = "convstream.message.appended.v1"
	// TypeMessageUpdated carries an id and a JSON merge patch (RFC 7386).
	TypeMessageUpdated = "convstream.message.updated.v1"
	// TypeMessageDeleted carries {"id"}.
	TypeMessageDeleted = "convstream.message.deleted.v1"
	// TypeGroupsUpserted carries one message-group object; id required.
	TypeGroupsUpserted = "convstream.groups.upserted.v1"
	// TypeMessageChunk carries a MessageChunk, on Subjects.Chunks (see
	// live.go).
	TypeMessageChunk = "convstream.message.chunk.v1"
	// TypeMessageCompleted carries a MessageCompleted, on Subjects.Events.
	TypeMessageCompleted = "convstream.message.completed.v1"
	// TypeSnapshotUpdated carries a Snapshot: the value of the snapshot
	// bucket.
	TypeSnapshotUpdated = "convstream.snapshot.updated.v1"
	// TypeSnapshotDelta carries a SnapshotDelta: what one applied event
	// changed in the flatList, published on the snapshots subject.
	TypeSnapshotDelta = "convstream.snapshot.delta.v1"
	// TypeInferenceRequested carries an InferenceRequest.
	TypeInferenceRequested = "convstream.inference.requested.v1"
	// TypeInferenceContext carries an InferenceContext.
	TypeInferenceContext = "convstream.inference.context.v1"
	// TypePipelineFailed carries a PipelineFailed.
	TypePipelineFailed = "convstream.pipeline.failed.v1"
	// TypeEventRejected carries an EventRejected.
	TypeEventRejected = "convstream.event.rejected.v1"
	// TypeEventDeadLettered carries an EventDeadLettered.
	TypeEventDeadLettered = "convstream.event.deadlettered.v1"
	// TypeDoctorRequested carries a DoctorRequest.
	TypeDoctorRequested = "convstream.doctor.requested.v1"
	// TypeDoctorDiagnosis carries a DoctorDiagnosis.
	TypeDoctorDiagnosis = "convstream.doctor.diagnosis.v1"
	// TypeReplyRequested carries a ReplyRequest, on Subjects.Replies: the
	// orchestrator's work queue.
	TypeReplyRequested = "convstream.reply.requested.v1"
	// TypeReplyStop carries a ReplyStop, a core NATS request on
	// Subjects.Stop.
	TypeReplyStop = "convstream.reply.stop.v1"
)

// eventTypes is the list of Types; events says which of them the events
// stream takes.
var eventTypes = []struct {
	name   string
	events bool // EventTypes
}{
	{TypeMessageAppended, true},
	{TypeMessageUpdated, true},
	{TypeMessageDeleted, true},
	{TypeGroupsUpserted, true},
	{TypeMessageChunk, true},
	{TypeMessageCompleted, true},
	{TypeSnapshotUpdated, false},
	{TypeSnapshotDelta, false},
	{TypeInferenceRequested, false},
	{TypeInferenceContext, false},
	{TypePipelineFailed, false},
	{TypeEventRejected, false},
	{TypeEventDeadLettered, false},
	{TypeDoctorRequested, false},
	{TypeDoctorDiagnosis, false},
	{TypeReplyRequested, false},
	{TypeReplyStop, false},
}

// Types returns every event type of the contract.
func Types() []string {
	out := make([]string, len(eventTypes))
	for i, t := range eventTypes {
		out[i] = t.name
	}
	return out
}

// EventTypes returns the types accepted on the events stream: on a
// conversation's events subject, and TypeMessageChunk on its chunks
// subject.
func EventTypes() []string {
	var out []string
	for _, t := range eventTypes {
		if t.events {
			out = append(out, t.name)
		}
	}
	return out
}

// isEventType reports whether t is accepted on the events stream.
func isEventType(t string) bool {
	for _, e := range eventTypes {
		if e.name == t {
			return e.events
		}
	}
	return false
}
