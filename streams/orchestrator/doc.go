// Package orchestrator writes assistants' replies: it takes reply requests
// (streams.TypeReplyRequested) from the replies work-queue stream, at most
// a set number at a time, and for each writes the placeholder (an
// assistant message with streamStatus streaming, whose parent is the
// message replied to), asks the worker for the context in the model's
// format (an inference request), calls the model (package models) and
// sends what it writes as chunks, then the completion: done, error (the
// provider's error as LobeHub records it), or stopped when a client asked
// (streams.TypeReplyStop on the conversation's stop subject). A request
// redelivered because its orchestrator died while its placeholder is still
// streaming completes it as interrupted.
//
// Tool calls are recorded as the reply's tools; running them is the
// application's: it appends each result as a tool message (tool_call_id,
// plugin) under the reply and requests the next reply with it as the
// userMessageId (docs/events.md, "Live replies").
package orchestrator
