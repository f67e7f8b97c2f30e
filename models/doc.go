// Package models calls a language model and streams its reply: the text,
// reasoning and tool calls as the model writes them, then how it ended
// (finish reason, usage, the provider's fields a later request must send
// back) or an error in the shape LobeHub records on a message.
//
// A Model takes the context a worker prepared (package providers writes
// it in the model's format; see Model.Format) and calls the provider's
// streaming API: OpenAI Chat Completions through openai-go, which every
// OpenAI-compatible server (vLLM, Ollama, LiteLLM) speaks through a base
// URL; Anthropic Messages through anthropic-sdk-go; Gemini through its
// REST API's server-sent events. Builtin needs no key and no network: it
// writes deterministic text at a set rate, for a first run and for tests.
//
// Open picks one by name ("builtin", "openai:gpt-4.1-mini", ...) and reads
// its key from the environment or a file, never from a flag. Requests the
// provider refuses with 429 or 5xx are tried again with a bounded backoff
// (Retry), as long as nothing of the reply was streamed yet.
//
// The package knows nothing of NATS or of the conversation's events: the
// orchestrator (streams/orchestrator) turns what a Model streams into them.
package models
