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

// RejectError says why an event cannot be applied. It is permanent: the
// same event would be refused again.
type RejectError struct {
	// Code says why, machine-readable (RejectCodes lists them).
	Code RejectCode
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
func (e *RejectError) Error() string { return string(e.Code) + ": " + e.Reason }

// Unwrap returns the underlying error.
func (e *RejectError) Unwrap() error { return e.Err }

// Is reports whether target is e's code, or a *RejectError of the same
// code: a code is the sentinel of its rejections, so that
// errors.Is(err, CodeNotFound) tells a refusal for a missing message from
// any other, however deeply err wraps it.
func (e *RejectError) Is(target error) bool {
	switch t := target.(type) {
	case RejectCode:
		return e.Code == t
	case *RejectError:
		return t != nil && e.Code == t.Code
	}
	return false
}

// Reject returns a *RejectError with a formatted reason.
func Reject(code RejectCode, format string, args ...any) *RejectError {
	return &RejectError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// RejectAt returns a *RejectError about what is at path, its reason
// "PATH: REASON".
func RejectAt(code RejectCode, path, format string, args ...any) *RejectError {
	return &RejectError{Code: code, Path: path, Reason: path + ": " + fmt.Sprintf(format, args...)}
}

// RejectErr returns a *RejectError whose reason is err's text.
func RejectErr(code RejectCode, err error) *RejectError {
	return &RejectError{Code: code, Reason: err.Error(), Err: err}
}
