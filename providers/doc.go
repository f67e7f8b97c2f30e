// Package providers turns the messages a context pipeline produces into a
// request body that a model provider's API accepts: OpenAI Chat
// Completions and Responses, Anthropic Messages and Gemini
// generateContent.
//
// A pipeline's output keeps the reference's shape, which no provider takes
// as it is: compare messages hold their columns, unknown roles pass
// through, a tool call may lack its result and a result its call. Build
// first normalises the messages into plain turns (system, user, assistant
// with tool calls, tool results), deciding each of those cases the same
// way for every format (see Normalize), then writes the format's body:
// what a provider requires of roles, alternation, empty content, images
// and tool pairing is decided in the file of that format.
package providers
