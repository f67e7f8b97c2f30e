package providers

// Provider fields are what a model returns beside its words that the next
// request to the same provider must carry back: Gemini's thought
// signatures, Anthropic's thinking blocks and their signatures, OpenAI
// Responses' reasoning items. Whoever writes a reply (an orchestrator)
// keeps them on the assistant message under these names; the pipeline
// passes them through (ToolCall copies tools[i].thoughtSignature to
// tool_calls[i].thoughtSignature, MessageContent turns a signed
// reasoning into a thinking part, MessageCleanup keeps reasoning), and
// Build sends them back where the request's Profile says the provider
// takes them. docs/events.md, "Provider fields", is the reference.
//
// On a stored (reference-shaped) assistant message:
//
//	tools[i].thoughtSignature          Gemini: the signature of the i-th functionCall part
//	reasoning.content                  Anthropic: the thinking text (one block)
//	reasoning.signature                Anthropic: that thinking block's signature
//	reasoning.providerFields.provider  who wrote the fields: anthropic, gemini or openai
//	reasoning.providerFields.model     the model that wrote them
//	reasoning.providerFields.thoughtSignature  Gemini: the signature of the reply's first non-call part
//	reasoning.providerFields.thinking  Anthropic: every thinking and redacted_thinking block, in order
//	reasoning.providerFields.reasoningItems    OpenAI Responses: the reply's reasoning items
const (
	// FieldThoughtSignature is Gemini's thought signature: on a tool call
	// (tools[i] and, after the pipeline, tool_calls[i]) and in
	// reasoning.providerFields.
	FieldThoughtSignature = "thoughtSignature"
	// FieldReasoning is the assistant message's reasoning object
	// ({content, signature, providerFields}).
	FieldReasoning = "reasoning"
	// FieldReasoningContent is reasoning.content, the thinking text.
	FieldReasoningContent = "content"
	// FieldReasoningSignature is reasoning.signature, the signature of
	// Anthropic's thinking block.
	FieldReasoningSignature = "signature"
	// FieldProviderFields is reasoning.providerFields.
	FieldProviderFields = "providerFields"
	// FieldProvider is reasoning.providerFields.provider: anthropic,
	// gemini or openai.
	FieldProvider = "provider"
	// FieldModel is reasoning.providerFields.model.
	FieldModel = "model"
	// FieldThinking is reasoning.providerFields.thinking: Anthropic's
	// content blocks of type thinking ({thinking, signature}) and
	// redacted_thinking ({data}), as the API returned them.
	FieldThinking = "thinking"
	// FieldReasoningItems is reasoning.providerFields.reasoningItems: the
	// OpenAI Responses output items of type reasoning ({id, summary,
	// encrypted_content}), as the API returned them.
	FieldReasoningItems = "reasoningItems"
)

// The providers a reply's fields come from
// (reasoning.providerFields.provider).
const (
	ProviderAnthropic = "anthropic"
	ProviderGemini    = "gemini"
	ProviderOpenAI    = "openai"
)

// SkipThoughtSignature is the value Gemini documents for a functionCall
// part whose signature was not kept (history from another model, or a call
// the application wrote): "skip_thought_signature_validator"
// (ai.google.dev/gemini-api/docs/thought-signatures). Build writes it
// where the Profile asks for signatures and none was kept.
const SkipThoughtSignature = "skip_thought_signature_validator"
