package streams

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrInvalidConfig reports an unusable option or flag value.
	ErrInvalidConfig = errors.New("streams: invalid configuration")
	// ErrRejected marks an event or request that was refused; the refusal
	// has been reported on the errors subject. Its cause is a *RejectError.
	ErrRejected = errors.New("streams: rejected")
	// ErrNotReady is returned by Worker.Ready before the worker consumes,
	// and while it is disconnected from NATS.
	ErrNotReady = errors.New("streams: not ready")
	// ErrUnknownConversation is returned for a conversation without events.
	ErrUnknownConversation = errors.New("streams: unknown conversation")
	// ErrUnknownPipeline is what a Pipelines implementation wraps when it has
	// no spec of the requested name.
	ErrUnknownPipeline = errors.New("streams: unknown pipeline")
	// ErrNotStreaming is returned for a stop of a reply that has already
	// ended: no orchestrator writes it, so none would answer.
	ErrNotStreaming = errors.New("streams: reply not streaming")
)

// Reason codes of a rejection, machine-readable companions of its text.
const (
	CodeTooLarge         = "too_large"             // over the event payload limit
	CodeBadSubject       = "bad_subject"           // subject does not name a valid conversation id
	CodeNotCloudEvent    = "not_cloudevent"        // not a valid CloudEvent in either content mode
	CodeUnknownType      = "unknown_type"          // type is not one this subject accepts
	CodeBadConversation  = "conversation_mismatch" // conversationid missing or different from the subject's
	CodeContentType      = "unsupported_content_type"
	CodeBadData          = "bad_data"          // data is not valid JSON/msgpack or not an object
	CodeMissingID        = "missing_id"        // data lacks a string id
	CodeInvalidData      = "invalid_data"      // the conversation refuses the data as malformed
	CodeExists           = "exists"            // append of an id that exists with other content
	CodeNotFound         = "not_found"         // update/delete of a missing message, or unknown leaf
	CodeCycle            = "cycle"             // the message would be its own ancestor
	CodeTooManyMessages  = "too_many_messages" // over the per-conversation message limit
	CodeSnapshotTooLarge = "snapshot_too_large"
	CodeUnknownPipeline  = "unknown_pipeline"
	CodeInternal         = "internal" // a bug: the stage panicked
	// CodeChunkOutOfOrder: a chunk whose seq is not the next of its
	// message's.
	CodeChunkOutOfOrder = "chunk_out_of_order"
	// CodeNotStreaming: a chunk or completion for a message that is not
	// streaming (finished, or never a reply).
	CodeNotStreaming = "not_streaming"
)

// RejectError says why an event cannot be applied. It is permanent: the
// same event would be refused again.
type RejectError struct {
	// Code is one of the Code constants.
	Code string
	// Reason is a human-readable explanation.
	Reason string
	// Path names what is at fault, where one thing is: an attribute of
	// the envelope ("specversion", "source") or a field of the data as
	// JavaScript writes it ("data.metadata.tools[2]").
	Path string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "CODE: REASON".
func (e *RejectError) Error() string { return e.Code + ": " + e.Reason }

// Unwrap returns the underlying error.
func (e *RejectError) Unwrap() error { return e.Err }

// Reject returns a *RejectError with a formatted reason.
func Reject(code, format string, args ...any) *RejectError {
	return &RejectError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// RejectAt returns a *RejectError about what is at path, its reason
// "PATH: REASON".
func RejectAt(code, path, format string, args ...any) *RejectError {
	return &RejectError{Code: code, Path: path, Reason: path + ": " + fmt.Sprintf(format, args...)}
}

// RejectErr returns a *RejectError whose reason is err's text.
func RejectErr(code string, err error) *RejectError {
	return &RejectError{Code: code, Reason: err.Error(), Err: err}
}

// CodeBusy is the code of an inference or doctor request refused because
// the worker serves as many as it may and as many more wait: the reply
// carries a retry hint (EventRejected.RetryAfterMs). It is replied only,
// not kept in the errors stream: the request was not at fault.
const CodeBusy = "busy"

// CodeTooDeep is the code of an event that would nest the conversation's
// branch points deeper than Limits.MaxBranchDepth.
const CodeTooDeep = "too_deep"
