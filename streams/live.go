package streams

// Live replies. A reply starts as an ordinary TypeMessageAppended of an
// assistant message whose streamStatus is StreamStreaming; chunks
// (TypeMessageChunk, on the conversation's chunks subject) add to it as a
// model writes it; a TypeMessageCompleted on the events subject ends it
// with its final fields. The events stream stores the chunks only until
// the completion: the worker then purges them, so the stream keeps
// replies, not chunks. docs/events.md gives the reasoning. Their types
// are in eventtypes.go.

// FieldStreamStatus is the message field that says whether a message is
// being written: one of the Stream constants. A message without it is an
// ordinary, finished message.
const FieldStreamStatus = "streamStatus"

// Values of a message's streamStatus, and of MessageCompleted.Status.
const (
	// StreamStreaming marks a message being written: chunks may follow.
	StreamStreaming = "streaming"
	// StreamDone: the model finished.
	StreamDone = "done"
	// StreamStopped: a client stopped the reply; the message holds what was
	// written.
	StreamStopped = "stopped"
	// StreamInterrupted: the writer went away (no chunk for the reply idle
	// timeout, or its orchestrator died); the message holds what was
	// written.
	StreamInterrupted = "interrupted"
	// StreamError: the model call failed; the message's error says why.
	StreamError = "error"
)

// EndStatuses are the statuses a completion may give a message.
var EndStatuses = []string{StreamDone, StreamStopped, StreamInterrupted, StreamError}

// MessageChunk is the data of TypeMessageChunk: what a model wrote next in
// a streaming message. Seq numbers a message's chunks 1, 2, 3… with no gap:
// a chunk whose Seq is not the next is refused (CodeChunkOutOfOrder), one
// for a message that is not streaming too (CodeNotStreaming).
type MessageChunk struct {
	// ID is the streaming message's id.
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
	// Text is appended to the message's content, Reasoning to its
	// reasoning.content.
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls add to the message's tools.
	ToolCalls []ToolCallChunk `json:"toolCalls,omitempty"`
}

// ToolCallChunk is a piece of the Index'th tool call of a message (its
// entry in the message's tools). The first piece of a call names it (ID,
// Identifier, APIName, Type); Arguments of every piece are appended to the
// call's arguments string.
type ToolCallChunk struct {
	Index      int    `json:"index"`
	ID         string `json:"id,omitempty"`
	Identifier string `json:"identifier,omitempty"`
	APIName    string `json:"apiName,omitempty"`
	Type       string `json:"type,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
}

// MessageCompleted is the data of TypeMessageCompleted: the end of a
// streaming message. Its fields are the final message's: applied, the
// message equals what one TypeMessageAppended of the final message would
// have made, and the conversation equals conversation.Parse of its final
// messages. Content is the whole text, not what the chunks lacked: the
// chunks are purged once the completion is applied, and a conversation
// rebuilt from the events stream sees the placeholder and the completion
// only.
type MessageCompleted struct {
	// ID is the streaming message's id.
	ID string `json:"id"`
	// Status is the message's final streamStatus: StreamDone,
	// StreamStopped, StreamInterrupted or StreamError.
	Status string `json:"status"`
	// Content is the message's final content.
	Content string `json:"content"`
	// Reasoning is the message's final reasoning ({content, signature,
	// ...}: what a later request must send back stays in it).
	Reasoning map[string]any `json:"reasoning,omitempty"`
	// Tools are the message's final tool calls (LobeHub's ChatToolPayload:
	// id, identifier, apiName, arguments, type, and provider fields such as
	// thoughtSignature).
	Tools []map[string]any `json:"tools,omitempty"`
	// Model and Provider name what wrote the message.
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	// Usage and FinishReason go to the message's metadata (metadata.usage,
	// metadata.finishReason).
	Usage        map[string]any `json:"usage,omitempty"`
	FinishReason string         `json:"finishReason,omitempty"`
	// Error is the message's error, for StreamError (as LobeHub records a
	// provider's: type, message, and the provider's body).
	Error *MessageError `json:"error,omitempty"`
}

// MessageError is a message's error field.
type MessageError struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
	// Code is the provider's status or error code, when it gave one.
	Code string `json:"code,omitempty"`
	// Body is the provider's error body, when it gave one.
	Body any `json:"body,omitempty"`
}

// Patch returns the merge patch (RFC 7386) that turns the placeholder into
// the final message: the fields c carries, the status as streamStatus, and
// usage and finishReason within metadata.
func (c *MessageCompleted) Patch() map[string]any {
	p := map[string]any{FieldStreamStatus: c.Status, "content": c.Content}
	if c.Reasoning != nil {
		p["reasoning"] = c.Reasoning
	}
	if c.Tools != nil {
		tools := make([]any, len(c.Tools))
		for i, t := range c.Tools {
			tools[i] = t
		}
		p["tools"] = tools
	}
	if c.Model != "" {
		p["model"] = c.Model
	}
	if c.Provider != "" {
		p["provider"] = c.Provider
	}
	if c.Error != nil {
		e := map[string]any{"type": c.Error.Type}
		if c.Error.Message != "" {
			e["message"] = c.Error.Message
		}
		if c.Error.Code != "" {
			e["code"] = c.Error.Code
		}
		if c.Error.Body != nil {
			e["body"] = c.Error.Body
		}
		p["error"] = e
	}
	if c.Usage != nil || c.FinishReason != "" {
		md := map[string]any{}
		if c.Usage != nil {
			md["usage"] = c.Usage
		}
		if c.FinishReason != "" {
			md["finishReason"] = c.FinishReason
		}
		p["metadata"] = md
	}
	return p
}

// TextAppend is one addition of an append delta (SnapshotDelta.Append):
// Text added at the end of a string field of the flatList entry at Index,
// the message ID.
type TextAppend struct {
	Index int    `json:"i"`
	ID    string `json:"id"`
	// Field is AppendContent or AppendReasoning.
	Field string `json:"f"`
	Text  string `json:"t"`
}

// Fields a TextAppend adds to.
const (
	// AppendContent appends to the entry's content.
	AppendContent = "content"
	// AppendReasoning appends to the entry's reasoning.content (a
	// reasoning object {content: ""} is made when there is none).
	AppendReasoning = "reasoning"
)

// ReplyRequest is the data of TypeReplyRequested: a request for an
// assistant's reply, taken by one orchestrator.
type ReplyRequest struct {
	ConversationID string `json:"conversationId"`
	// UserMessageID names the message replied to; empty means the leaf of
	// the active path. The reply's parent is ParentID when set, else it.
	UserMessageID string `json:"userMessageId,omitempty"`
	ParentID      string `json:"parentId,omitempty"`
	// MessageID is the reply's id; empty lets the orchestrator choose.
	MessageID string `json:"messageId,omitempty"`
	// Model names the model ("builtin", "openai:gpt-4.1-mini", ...); empty
	// means the orchestrator's default.
	Model string `json:"model,omitempty"`
	// Pipeline and Params are the inference request's.
	Pipeline string         `json:"pipeline,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	// Tools are the functions the model may call; its calls are recorded
	// as the reply's tools, for the application to run.
	Tools []ReplyTool `json:"tools,omitempty"`
}

// ReplyTool is a function a reply's model may call.
type ReplyTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of its arguments; absent: any object.
	Parameters map[string]any `json:"parameters,omitempty"`
}

// ReplyStop is the data of TypeReplyStop: stop the streaming message ID of
// the conversation. The orchestrator writing it cancels the model call and
// completes the message as StreamStopped with what was written.
type ReplyStop struct {
	ID string `json:"id"`
}
