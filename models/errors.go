package models

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorType classifies a model call's failure with LobeHub's names for
// them (its agent runtime's error types), so that a UI written for
// LobeHub's messages shows ours the same way.
type ErrorType string

// The error types a call fails with.
const (
	// ErrInvalidAPIKey: the provider refused the key (401), or none was
	// found.
	ErrInvalidAPIKey ErrorType = "InvalidProviderAPIKey"
	// ErrPermissionDenied: the key may not use the model (403).
	ErrPermissionDenied ErrorType = "PermissionDenied"
	// ErrModelNotFound: the provider knows no such model (404).
	ErrModelNotFound ErrorType = "ModelNotFound"
	// ErrQuotaLimitReached: rate limited (429) after every retry.
	ErrQuotaLimitReached ErrorType = "QuotaLimitReached"
	// ErrInsufficientQuota: the account has no credit left.
	ErrInsufficientQuota ErrorType = "InsufficientQuota"
	// ErrExceededContextWindow: the context is longer than the model
	// takes.
	ErrExceededContextWindow ErrorType = "ExceededContextWindow"
	// ErrProviderBiz: any other refusal or failure the provider reported
	// (400, 5xx after every retry, an error event in the stream).
	ErrProviderBiz ErrorType = "ProviderBizError"
	// ErrStreamChunk: the stream carried something unreadable.
	ErrStreamChunk ErrorType = "StreamChunkError"
	// ErrAgentRuntime: the call failed on our side of the wire (no
	// connection, a bad configuration).
	ErrAgentRuntime ErrorType = "AgentRuntimeError"
)

// Error is a failed model call, as recorded on the reply: Type (an
// ErrorType), Message (the provider's words) and Code (the provider's
// code for it, or the HTTP status).
type Error struct {
	Type    ErrorType `json:"type"`
	Message string    `json:"message"`
	Code    string    `json:"code,omitempty"`
	// Status is the HTTP status of the provider's answer; 0 when there was
	// none.
	Status int `json:"-"`
	// RetryAfter is the wait the provider asked for before a retry
	// (Retry-After, retry-after-ms); 0 when it asked none.
	RetryAfter time.Duration `json:"-"`
	// Err is the error it was made from.
	Err error `json:"-"`
}

func (e *Error) Error() string {
	s := "models: " + string(e.Type)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying the call again may succeed: a 429 or a
// 5xx.
func (e *Error) Retryable() bool { return e.Status == http.StatusTooManyRequests || e.Status >= 500 }

// statusError makes the Error of a provider's answer with HTTP status
// status, its error code (or type) code and its message.
func statusError(status int, code, message string, err error) *Error {
	e := &Error{Status: status, Code: code, Message: message, Err: err}
	if e.Code == "" && status != 0 {
		e.Code = strconv.Itoa(status)
	}
	lc := strings.ToLower(code + " " + message)
	switch {
	case strings.Contains(lc, "insufficient_quota") || strings.Contains(lc, "credit balance"):
		e.Type = ErrInsufficientQuota
	case strings.Contains(lc, "context_length") || strings.Contains(lc, "context window") ||
		strings.Contains(lc, "prompt is too long") || strings.Contains(lc, "maximum context length"):
		e.Type = ErrExceededContextWindow
	case status == http.StatusUnauthorized:
		e.Type = ErrInvalidAPIKey
	case status == http.StatusForbidden:
		e.Type = ErrPermissionDenied
	case status == http.StatusNotFound:
		e.Type = ErrModelNotFound
	case status == http.StatusTooManyRequests:
		e.Type = ErrQuotaLimitReached
	default:
		e.Type = ErrProviderBiz
	}
	return e
}

// runtimeError makes the Error of a call that failed before or outside the
// provider's answer; ctx's own end passes through unchanged.
func runtimeError(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Type: ErrAgentRuntime, Message: err.Error(), Err: err}
}

// AsError returns err as an *Error when it is one or wraps one, and
// otherwise an ErrAgentRuntime Error around it; nil for nil.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Type: ErrAgentRuntime, Message: err.Error(), Err: err}
}

// errNoKey is the error of a model whose key was not found.
func errNoKey(provider, env string) error {
	return &Error{Type: ErrInvalidAPIKey, Code: "no_api_key",
		Message: fmt.Sprintf("no API key for %s: set %s or %s_FILE", provider, env, env)}
}
