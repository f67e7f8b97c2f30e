package streams

import (
	"encoding/json"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/providers"
)

// ExtConversationID is the CloudEvents extension attribute naming the
// conversation an event belongs to.
const ExtConversationID = "conversationid"

// Media types of event data.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeMsgpack = "application/msgpack"
	// ContentTypeCloudEvents marks a structured-mode message.
	ContentTypeCloudEvents = "application/cloudevents+json"
)

// Snapshot is the data of TypeSnapshotUpdated and the value stored in the
// snapshot bucket under the conversation id.
type Snapshot struct {
	// Format is the snapshot's form, SnapshotFormat when written by this
	// release; 0 (absent) is read as format 1.
	Format         int    `json:"format,omitempty"`
	ConversationID string `json:"conversationId"`
	// Version is the events-stream sequence of the last event that changed
	// the conversation: it increases with every applied event, and names
	// one flat list whichever worker computed it.
	Version uint64 `json:"version"`
	// Sequence is the events-stream sequence of the last event taken into
	// account (applied, skipped or rejected).
	Sequence uint64 `json:"sequence"`
	// FlatList and ContextTree are those of conversation.Parse.
	FlatList    json.RawMessage `json:"flatList"`
	ContextTree json.RawMessage `json:"contextTree"`
}

// SnapshotDelta is the data of TypeSnapshotDelta: the changed tail of the
// flatList. Applied to the flatList of version BaseVersion (kept up to
// From, then FlatList appended) it gives the flatList of Version, whose
// length is Length. A delta with From 0 carries the whole flatList and
// applies to any base.
type SnapshotDelta struct {
	ConversationID string `json:"conversationId"`
	Version        uint64 `json:"version"`
	BaseVersion    uint64 `json:"baseVersion"`
	// Sequence is the events-stream sequence of the event applied.
	Sequence uint64 `json:"sequence"`
	From     int    `json:"from"`
	Length   int    `json:"length"`
	// Keep is how many entries at the end of the base's flatList follow
	// the entries carried (0: none, the carried entries end the list).
	Keep     int               `json:"keep,omitempty"`
	FlatList []json.RawMessage `json:"flatList"`
	// Append, on the delta of a chunk, adds text to entries of the flatList
	// instead: a UI receives the new characters only. Such a delta carries
	// Version, BaseVersion, Length (the list's, unchanged) and Append only,
	// the least a follower needs (FillAppend fills the rest).
	Append []TextAppend `json:"append,omitempty"`
}

// InferenceRequest is the data of TypeInferenceRequested.
type InferenceRequest struct {
	ConversationID string `json:"conversationId"`
	// LeafID names the message the context ends at; empty means the
	// active path.
	LeafID string `json:"leafId,omitempty"`
	// Pipeline names the pipeline spec; empty means "default".
	Pipeline string `json:"pipeline,omitempty"`
	// Params configure the pipeline: an object of processor name →
	// configuration merged over the spec's.
	Params map[string]any `json:"params,omitempty"`
	// Format names the shape of the reply's request: openai.chat (the
	// default), openai.responses, anthropic.messages, gemini, or raw (the
	// pipeline's output unchanged). See package providers.
	Format string `json:"format,omitempty"`
	// Budget bounds the context by tokens; not for raw.
	Budget *TokenBudget `json:"budget,omitempty"`
	// Cache marks prompt-cache breakpoints in an anthropic.messages
	// request; other formats ignore it.
	Cache *providers.CacheBreakpoints `json:"cache,omitempty"`
	// Profile says what the model the request is for accepts (prefill,
	// signatures, function turns, assistant images); absent: a model the
	// worker does not know, written for what every current model takes.
	Profile *providers.Profile `json:"profile,omitempty"`
}

// TokenBudget is an inference request's token budget (providers.Budget).
type TokenBudget struct {
	// MaxTokens is the model's context window.
	MaxTokens int `json:"maxTokens"`
	// Reserve is kept free for the reply; it is also an Anthropic
	// request's max_tokens.
	Reserve int `json:"reserve,omitempty"`
	// KeepTurns is how many of the last turns are kept whatever they cost
	// (default 1).
	KeepTurns int `json:"keepTurns,omitempty"`
	// Encoding counts tokens exactly with an OpenAI encoding (o200k_base,
	// cl100k_base); empty means the estimate (providers.Estimator).
	Encoding string `json:"encoding,omitempty"`
}

// InferenceContext is the data of TypeInferenceContext: the pipeline's
// output for one request.
type InferenceContext struct {
	RequestID      string `json:"requestId"`
	ConversationID string `json:"conversationId"`
	// Messages are the context as OpenAI Chat Completions messages, or for
	// Format raw the pipeline's output unchanged.
	Messages []enginecore.Message `json:"messages"`
	// Format is the format of Request.
	Format string `json:"format"`
	// Request is the provider's request body without model or
	// credentials; absent for raw.
	Request map[string]any `json:"request,omitempty"`
	// Usage is what the token budget counted and dropped; absent without
	// one.
	Usage *providers.Usage `json:"usage,omitempty"`
	// Warnings say what of the context the format could not carry (a
	// group message that reached it unflattened); absent when none.
	Warnings    []string         `json:"warnings,omitempty"`
	Metadata    map[string]any   `json:"metadata"`
	Stats       enginecore.Stats `json:"stats"`
	IsAborted   bool             `json:"isAborted"`
	AbortReason string           `json:"abortReason"`
	// Pipeline, LeafID and Version say what was run on what: the spec, the
	// leaf (empty for the active path) and the snapshot version read.
	Pipeline string `json:"pipeline"`
	LeafID   string `json:"leafId,omitempty"`
	Version  uint64 `json:"version"`
}

// PipelineFailed is the data of TypePipelineFailed.
type PipelineFailed struct {
	RequestID      string `json:"requestId"`
	ConversationID string `json:"conversationId"`
	// Processor names the failing processor ("" when the pipeline failed
	// outside any processor, for example on a timeout).
	Processor string `json:"processor"`
	// Code says what failed, machine-readable (FailureCodes lists them).
	Code     FailureCode `json:"code"`
	Message  string      `json:"message"`
	Cause    string      `json:"cause"`
	Pipeline string      `json:"pipeline"`
}

// EventRejected is the data of TypeEventRejected.
type EventRejected struct {
	// EventID is the refused CloudEvent's id, or null when it has none.
	EventID *string `json:"eventId"`
	// Subject is the NATS subject the event arrived on.
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
	// Code is the reason's machine-readable form (RejectCodes lists
	// them).
	Code RejectCode `json:"code"`
	// Path names the attribute or data field at fault, when one is
	// (RejectError.Path).
	Path string `json:"path,omitempty"`
	// Type is the refused event's type, when it has one.
	Type string `json:"type,omitempty"`
	// ConversationID is the conversation concerned, when known.
	ConversationID string `json:"conversationId,omitempty"`
	// Sequence is the events-stream sequence of the refused event (0 for
	// inference requests, which are not stored).
	Sequence uint64 `json:"sequence,omitempty"`
	// RetryAfterMs is, for code busy, how many milliseconds to wait
	// before asking again.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

// DoctorRequest is the data of TypeDoctorRequested: a request for the
// diagnosis of a conversation's stored messages (conversation.Diagnose).
type DoctorRequest struct {
	ConversationID string `json:"conversationId"`
}

// DoctorDiagnosis is the data of TypeDoctorDiagnosis.
type DoctorDiagnosis struct {
	RequestID      string `json:"requestId"`
	ConversationID string `json:"conversationId"`
	// Version is the snapshot version the diagnosis was made on.
	Version   uint64                  `json:"version"`
	Diagnosis *conversation.Diagnosis `json:"diagnosis"`
}
