package streams

import (
	"errors"
	"slices"

	"github.com/convstream/convstream/conversation"
)

// RejectCode says why an event or request was refused: the code of a
// RejectError and of an EventRejected, the machine-readable companion of
// its reason. A code is also the sentinel of its rejections:
// errors.Is(err, CodeNotFound) reports whether err is (or wraps) a
// *RejectError of that code.
type RejectCode string

// Error returns the code itself, so that a RejectCode can be the target
// of errors.Is (RejectError.Is).
func (c RejectCode) Error() string { return string(c) }

// Codes of a rejection. RejectCodes lists them, and a test checks that
// list against schemas/convstream.event.rejected.v1.json, the Rejections
// table of docs/events.md and the TypeScript client's generated types.
const (
	CodeTooLarge        RejectCode = "too_large"             // over the event payload limit
	CodeBadSubject      RejectCode = "bad_subject"           // subject does not name a valid conversation id
	CodeNotCloudEvent   RejectCode = "not_cloudevent"        // not a valid CloudEvent in either content mode
	CodeUnknownType     RejectCode = "unknown_type"          // type is not one this subject accepts
	CodeBadConversation RejectCode = "conversation_mismatch" // conversationid missing or different from the subject's
	CodeContentType     RejectCode = "unsupported_content_type"
	CodeBadData         RejectCode = "bad_data"          // data is not valid JSON/msgpack or not an object
	CodeMissingID       RejectCode = "missing_id"        // data lacks a string id
	CodeInvalidData     RejectCode = "invalid_data"      // the conversation refuses the data as malformed
	CodeExists          RejectCode = "exists"            // append of an id that exists with other content
	CodeNotFound        RejectCode = "not_found"         // update/delete of a missing message, or unknown leaf
	CodeCycle           RejectCode = "cycle"             // the message would be its own ancestor
	CodeTooManyMessages RejectCode = "too_many_messages" // over the per-conversation message limit
	// CodeSnapshotTooLarge: the conversation's snapshot would be over
	// what can be stored.
	CodeSnapshotTooLarge RejectCode = "snapshot_too_large"
	CodeUnknownPipeline  RejectCode = "unknown_pipeline"
	CodeInternal         RejectCode = "internal" // a bug: the stage panicked
	// CodeTooDeep: the event would nest the conversation's branch points
	// deeper than Limits.MaxBranchDepth.
	CodeTooDeep RejectCode = "too_deep"
	// CodeBusy: an inference or doctor request refused because the worker
	// serves as many as it may and as many more wait. The reply carries a
	// retry hint (EventRejected.RetryAfterMs); it is replied only, not
	// kept in the errors stream: the request was not at fault.
	CodeBusy RejectCode = "busy"
	// CodeChunkOutOfOrder: a chunk whose seq is not the next of its
	// message's.
	CodeChunkOutOfOrder RejectCode = "chunk_out_of_order"
	// CodeNotStreaming: a chunk or completion for a message that is not
	// streaming (finished, or never a reply).
	CodeNotStreaming RejectCode = "not_streaming"
)

// rejectCodes is the list of RejectCodes, in the order of the schema's
// enum, each with whether it degrades its conversation.
var rejectCodes = []struct {
	code     RejectCode
	degrades bool // Degrades
}{
	{CodeTooLarge, false},
	{CodeBadSubject, false},
	{CodeNotCloudEvent, false},
	{CodeUnknownType, false},
	{CodeBadConversation, false},
	{CodeContentType, false},
	{CodeBadData, false},
	{CodeMissingID, false},
	{CodeInvalidData, false},
	{CodeExists, false},
	{CodeNotFound, false},
	{CodeCycle, false},
	{CodeTooManyMessages, true},
	{CodeSnapshotTooLarge, true},
	{CodeUnknownPipeline, false},
	{CodeInternal, false},
	{CodeTooDeep, true},
	{CodeBusy, false},
	{CodeChunkOutOfOrder, false},
	{CodeNotStreaming, false},
}

// RejectCodes returns every rejection code.
func RejectCodes() []RejectCode {
	codes := make([]RejectCode, len(rejectCodes))
	for i, c := range rejectCodes {
		codes[i] = c.code
	}
	return codes
}

// Degrades reports whether a rejection of code c marks its conversation
// degraded: c names a conversation limit (too many messages, a snapshot
// too large, branch points too deep) that the conversation reached. It
// keeps its last good state and goes on taking the events that fit.
func (c RejectCode) Degrades() bool {
	for _, r := range rejectCodes {
		if r.code == c {
			return r.degrades
		}
	}
	return false
}

// conversationCodes are the errors of package conversation that have a
// code of their own; any other error of a conversation is CodeInvalidData.
var conversationCodes = []struct {
	err  error
	code RejectCode
}{
	{conversation.ErrCycle, CodeCycle},
	{conversation.ErrMessageExists, CodeExists},
	{conversation.ErrMessageNotFound, CodeNotFound},
	{conversation.ErrTooManyMessages, CodeTooManyMessages},
	{conversation.ErrTooDeep, CodeTooDeep},
}

// RejectionOf returns the rejection that err, an error of applying an
// event to a conversation or of building its snapshot, stands for: err
// itself when it is a *RejectError; the code of a conversation error that
// has one (conversation.ErrCycle is CodeCycle, ErrMessageExists
// CodeExists, ErrMessageNotFound CodeNotFound, ErrTooManyMessages
// CodeTooManyMessages, ErrTooDeep CodeTooDeep); CodeInvalidData for any
// other: the conversation refuses the data as malformed. It is the one
// mapping from errors to codes, so that a refusal has the same code
// wherever it is found.
func RejectionOf(err error) *RejectError {
	var re *RejectError
	if errors.As(err, &re) {
		return re
	}
	for _, c := range conversationCodes {
		if errors.Is(err, c.err) {
			return RejectErr(c.code, err)
		}
	}
	return RejectErr(CodeInvalidData, err)
}

// FailureCode says what failed in an inference pipeline run: the code of
// a PipelineFailed, the machine-readable companion of its message.
type FailureCode string

// Codes of a pipeline failure. FailureCodes lists them, and a test checks
// that list against schemas/convstream.pipeline.failed.v1.json, the table
// of docs/events.md and the TypeScript client's generated types.
const (
	FailedProcessor  FailureCode = "processor_error" // a processor returned an error
	FailedInternal   FailureCode = "internal"        // a bug: a processor panicked or returned nothing
	FailedTimeout    FailureCode = "timeout"         // the run exceeded the inference timeout
	FailedCanceled   FailureCode = "canceled"        // the worker stopped during the run
	FailedLimit      FailureCode = "limit_exceeded"  // a processor would have exceeded the run's limits
	FailedTooLarge   FailureCode = "too_large"       // the context is larger than a reply can carry
	FailedOverBudget FailureCode = "over_budget"     // what the token budget must keep does not fit in it
)

// failureCodes is the list of FailureCodes, in the order of the schema's
// enum.
var failureCodes = []FailureCode{FailedProcessor, FailedInternal, FailedTimeout, FailedCanceled, FailedLimit,
	FailedTooLarge, FailedOverBudget}

// FailureCodes returns every pipeline-failure code.
func FailureCodes() []FailureCode { return slices.Clone(failureCodes) }
