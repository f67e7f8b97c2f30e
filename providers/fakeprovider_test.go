package providers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// fakeProvider is a local stand-in for the providers' APIs. It checks
// each request against the rules the real APIs enforce on roles, tool
// pairing, alternation and empty content, and those today's models add
// (Claude 4.6, Gemini 3): no final assistant turn (prefill), signatures
// on the current turn's Gemini function calls, Gemini function responses
// in a content of their own, image blocks only in Claude's user turns,
// thinking blocks signed and first in Claude's assistant turns. It answers
// 400 with the broken rule, and otherwise a minimal valid reply.
func fakeProvider(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	handle := func(path string, check func(map[string]any) error, reply string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req map[string]any
			err := json.Unmarshal(body, &req)
			if err == nil {
				err = check(req)
			}
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%q}}`, err.Error())
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, reply)
		})
	}
	handle("POST /v1/chat/completions", checkOpenAIChat,
		`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	handle("POST /v1/responses", checkOpenAIResponses,
		`{"id":"r","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"m1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}]}`)
	handle("POST /v1/messages", checkAnthropic,
		`{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	handle("POST /v1beta/models/gemini:generateContent", checkGemini,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func list(v any) []any         { l, _ := v.([]any); return l }
func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func str(v any) string         { s, _ := v.(string); return s }
func blank(s string) bool      { return strings.TrimSpace(s) == "" }
func errorf(i int, f string, a ...any) error {
	return fmt.Errorf("messages[%d]: %s", i, fmt.Sprintf(f, a...))
}

// checkOpenAIChat: roles the API knows; every assistant's tool calls
// answered by tool messages right after it, each naming one of them; no
// tool message anywhere else; content null only beside tool calls.
func checkOpenAIChat(req map[string]any) error {
	msgs := list(req["messages"])
	if len(msgs) == 0 {
		return fmt.Errorf("messages: must not be empty")
	}
	var open map[string]bool // calls of the last assistant not yet answered
	for i, v := range msgs {
		m := obj(v)
		role := str(m["role"])
		if role != "tool" && len(open) > 0 {
			return errorf(i, "tool_calls of an earlier assistant message have no response: %v", open)
		}
		switch role {
		case "system", "developer":
			if _, ok := m["content"].(string); !ok {
				return errorf(i, "%s content must be a string", role)
			}
		case "user":
			switch c := m["content"].(type) {
			case string:
			case []any:
				for _, p := range c {
					if typ := str(obj(p)["type"]); typ != "text" && typ != "image_url" {
						return errorf(i, "unknown part %q", typ)
					}
				}
			default:
				return errorf(i, "user content must be a string or parts")
			}
		case "assistant":
			calls := list(m["tool_calls"])
			if _, ok := m["content"].(string); !ok && len(calls) == 0 {
				return errorf(i, "assistant content must be a string unless tool_calls are given")
			}
			open = map[string]bool{}
			for _, c := range calls {
				fn := obj(obj(c)["function"])
				if !functionName.MatchString(str(fn["name"])) {
					return errorf(i, "function name %q", fn["name"])
				}
				if _, ok := fn["arguments"].(string); !ok {
					return errorf(i, "arguments must be a string")
				}
				open[str(obj(c)["id"])] = true
			}
		case "tool":
			id := str(m["tool_call_id"])
			if !open[id] {
				return errorf(i, "tool message %q does not respond to a preceding tool_calls message", id)
			}
			delete(open, id)
		default:
			return errorf(i, "role %q is not one of system, developer, user, assistant, tool", role)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("tool_calls have no response: %v", open)
	}
	return nil
}

// checkOpenAIResponses: message items of known roles; reasoning items
// with their summary and id or encrypted content; every function_call
// has a function_call_output after it and every output a call before it.
func checkOpenAIResponses(req map[string]any) error {
	called, answered := map[string]bool{}, map[string]bool{}
	for i, v := range list(req["input"]) {
		it := obj(v)
		switch str(it["type"]) {
		case "message":
			switch str(it["role"]) {
			case "system", "developer", "user", "assistant":
			default:
				return errorf(i, "role %q", it["role"])
			}
		case "function_call":
			if !functionName.MatchString(str(it["name"])) {
				return errorf(i, "function name %q", it["name"])
			}
			called[str(it["call_id"])] = true
		case "reasoning":
			if str(it["id"]) == "" && str(it["encrypted_content"]) == "" {
				return errorf(i, "a reasoning item needs its id or encrypted_content")
			}
			if _, ok := it["summary"].([]any); !ok {
				return errorf(i, "reasoning.summary: required")
			}
		case "function_call_output":
			id := str(it["call_id"])
			if !called[id] {
				return errorf(i, "no tool call found for function call output with call_id %s", id)
			}
			answered[id] = true
		default:
			return errorf(i, "item type %q", it["type"])
		}
	}
	for id := range called {
		if !answered[id] {
			return fmt.Errorf("no tool output found for function call %s", id)
		}
	}
	return nil
}

var toolUseID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// checkAnthropic: max_tokens; user first, then strict alternation; no
// empty or white-space text; every tool_use answered by a tool_result in
// the next message (results first), every result answering the message
// before; tools declared for the tool_use names; the last message the
// user's (Claude from 4.6: "This model does not support assistant message
// prefill. The conversation must end with a user message", whats-new-claude-4-6
// "Prefill removal"); image blocks only in user messages; thinking blocks
// only first in an assistant message, each with its signature.
func checkAnthropic(req map[string]any) error {
	if n, _ := req["max_tokens"].(float64); n <= 0 {
		return fmt.Errorf("max_tokens: required")
	}
	declared := map[string]bool{}
	for _, tl := range list(req["tools"]) {
		declared[str(obj(tl)["name"])] = true
	}
	if n, err := cacheBreakpoints(req); err != nil {
		return err
	} else if n > 4 {
		return fmt.Errorf("a maximum of 4 blocks with cache_control may be provided. Found %d", n)
	}
	msgs := list(req["messages"])
	if len(msgs) == 0 || str(obj(msgs[0])["role"]) != "user" {
		return fmt.Errorf("messages: first message must use the user role")
	}
	var pending map[string]bool
	for i, v := range msgs {
		m := obj(v)
		role := str(m["role"])
		if role != "user" && role != "assistant" {
			return errorf(i, "role %q", role)
		}
		if i > 0 && str(obj(msgs[i-1])["role"]) == role {
			return errorf(i, "roles must alternate between user and assistant")
		}
		blocks := list(m["content"])
		if len(blocks) == 0 {
			return errorf(i, "content must not be empty")
		}
		results := true
		for j, b := range blocks {
			bl := obj(b)
			switch typ := str(bl["type"]); typ {
			case "text":
				if blank(str(bl["text"])) {
					return errorf(i, "content[%d]: text content blocks must contain non-whitespace text", j)
				}
				results = false
			case "image":
				if role != "user" {
					return errorf(i, "content[%d]: image blocks are only supported in user messages", j)
				}
				results = false
			case "thinking", "redacted_thinking":
				if role != "assistant" || j > 0 && !strings.HasSuffix(str(obj(blocks[j-1])["type"]), "thinking") {
					return errorf(i, "content[%d]: thinking blocks must come first in an assistant message", j)
				}
				if typ == "thinking" && blank(str(bl["signature"])) || typ == "redacted_thinking" && blank(str(bl["data"])) {
					return errorf(i, "content[%d]: %s.signature: Field required", j, typ)
				}
				results = false
			case "tool_use":
				if role != "assistant" {
					return errorf(i, "tool_use in a %s message", role)
				}
				if !toolUseID.MatchString(str(bl["id"])) || !functionName.MatchString(str(bl["name"])) {
					return errorf(i, "content[%d]: tool_use id or name", j)
				}
				if !declared[str(bl["name"])] {
					return errorf(i, "requests which include tool_use blocks must define tools (%s)", bl["name"])
				}
				if _, ok := bl["input"].(map[string]any); !ok {
					return errorf(i, "tool_use input must be an object")
				}
			case "tool_result":
				if role != "user" || !results {
					return errorf(i, "content[%d]: tool_result blocks must come first in a user message", j)
				}
				id := str(bl["tool_use_id"])
				if !pending[id] {
					return errorf(i, "unexpected tool_use_id %s: no tool_use block in the previous message", id)
				}
				delete(pending, id)
			default:
				return errorf(i, "content[%d]: block type %q", j, typ)
			}
		}
		if len(pending) > 0 {
			return errorf(i, "tool_use ids without tool_result blocks immediately after: %v", pending)
		}
		pending = map[string]bool{}
		if role == "assistant" {
			for _, b := range blocks {
				if bl := obj(b); str(bl["type"]) == "tool_use" {
					pending[str(bl["id"])] = true
				}
			}
		}
		if i == len(msgs)-1 && role == "assistant" {
			return errorf(i, "This model does not support assistant message prefill. The conversation must end with a user message")
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("tool_use ids without tool_result blocks: %v", pending)
	}
	return nil
}

// checkGemini: user first, then alternation of user and model; no empty
// parts or text; every functionCall answered by a functionResponse of the
// same id in the next content, which holds only those responses (Vertex
// AI: "the number of function response parts is equal to the number of
// function call parts of the function call turn"); the last content the
// user's (Gemini 3 refuses a final model turn); in the current turn (from
// the last user content that is not function responses) the first
// functionCall of each model content carries a thoughtSignature
// (ai.google.dev/gemini-api/docs/thought-signatures: "Function call is
// missing a thought_signature").
func checkGemini(req map[string]any) error {
	contents := list(req["contents"])
	if len(contents) == 0 || str(obj(contents[0])["role"]) != "user" {
		return fmt.Errorf("contents: the first content must be the user's")
	}
	if str(obj(contents[len(contents)-1])["role"]) != "user" {
		return fmt.Errorf("contents: the last content must be the user's (no model prefill)")
	}
	current := 0
	for i, v := range contents {
		c := obj(v)
		if str(c["role"]) != "user" {
			continue
		}
		for _, p := range list(c["parts"]) {
			if obj(p)["functionResponse"] == nil {
				current = i
				break
			}
		}
	}
	for i := current; i < len(contents); i++ {
		for _, p := range list(obj(contents[i])["parts"]) {
			if pm := obj(p); pm["functionCall"] != nil {
				if blank(str(pm["thoughtSignature"])) {
					return errorf(i, "Function call is missing a thought_signature in functionCall parts")
				}
				break
			}
		}
	}
	var pending map[string]bool
	calls := 0 // the function calls of the previous content
	for i, v := range contents {
		c := obj(v)
		role := str(c["role"])
		if role != "user" && role != "model" {
			return errorf(i, "role %q", role)
		}
		if i > 0 && str(obj(contents[i-1])["role"]) == role {
			return errorf(i, "please ensure that multiturn requests alternate between user and model")
		}
		parts := list(c["parts"])
		if len(parts) == 0 {
			return errorf(i, "contents.parts must not be empty")
		}
		next := map[string]bool{}
		for j, p := range parts {
			pm := obj(p)
			switch {
			case pm["text"] != nil:
				if blank(str(pm["text"])) {
					return errorf(i, "parts[%d]: empty text", j)
				}
			case pm["functionCall"] != nil:
				if role != "model" {
					return errorf(i, "functionCall in a user content")
				}
				next[str(obj(pm["functionCall"])["id"])] = true
			case pm["functionResponse"] != nil:
				if len(parts) != calls {
					return errorf(i, "please ensure that the number of function response parts is equal to the number of function call parts of the function call turn")
				}
				id := str(obj(pm["functionResponse"])["id"])
				if !pending[id] {
					return errorf(i, "parts[%d]: functionResponse %s answers no functionCall of the previous content", j, id)
				}
				delete(pending, id)
			case pm["inlineData"] != nil, pm["fileData"] != nil:
			default:
				return errorf(i, "parts[%d]: unknown part", j)
			}
		}
		if len(pending) > 0 {
			return errorf(i, "functionCalls not answered: %v", pending)
		}
		pending, calls = next, len(next)
	}
	if len(pending) > 0 {
		return fmt.Errorf("functionCalls not answered: %v", pending)
	}
	return nil
}

// TestFakeProviderRefusesThePipelinesOutput checks that the fake provider's
// rules bite: the pipeline's output as it is, sent as Chat Completions
// messages, is refused for every conversation that holds a compare
// message (the gap the formats close).
func TestFakeProviderRefusesThePipelinesOutput(t *testing.T) {
	refused, withCompare := 0, 0
	for _, o := range corpus(t) {
		compare := false
		for _, m := range o.messages {
			compare = compare || m["role"] == "compare"
		}
		if !compare {
			continue
		}
		withCompare++
		if checkOpenAIChat(map[string]any{"messages": toAny(o.messages)}) != nil {
			refused++
		}
	}
	if withCompare == 0 || refused != withCompare {
		t.Fatalf("refused %d of %d conversations with compare messages", refused, withCompare)
	}
	t.Logf("raw pipeline output refused for %d of %d conversations with compare messages", refused, withCompare)
}

func toAny[T any](l []T) []any {
	out := make([]any, len(l))
	for i, v := range l {
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &out[i])
	}
	return out
}

// cacheBreakpoints counts an Anthropic request's cache_control markers and
// checks each.
func cacheBreakpoints(req map[string]any) (int, error) {
	n := 0
	check := func(where string, b any) error {
		cc, present := obj(b)["cache_control"]
		if !present {
			return nil
		}
		n++
		c := obj(cc)
		if str(c["type"]) != "ephemeral" {
			return fmt.Errorf("%s.cache_control.type: want ephemeral", where)
		}
		if ttl := str(c["ttl"]); ttl != "" && ttl != "5m" && ttl != "1h" {
			return fmt.Errorf("%s.cache_control.ttl: %q", where, ttl)
		}
		return nil
	}
	for i, b := range list(req["tools"]) {
		if err := check(fmt.Sprintf("tools[%d]", i), b); err != nil {
			return 0, err
		}
	}
	if sys, ok := req["system"].([]any); ok {
		for i, b := range sys {
			if err := check(fmt.Sprintf("system[%d]", i), b); err != nil {
				return 0, err
			}
		}
	}
	for i, m := range list(req["messages"]) {
		for j, b := range list(obj(m)["content"]) {
			if err := check(fmt.Sprintf("messages[%d].content[%d]", i, j), b); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}
