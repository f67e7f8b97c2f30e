package providers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
)

// The tests of this file each hold a request to a rule that a provider's
// current models enforce (cited in each), through the default pipeline
// where the rule concerns what a stored conversation carries.

// build runs the default pipeline over the conversation js and writes its
// output in format f, with the pipeline's input.
func build(t *testing.T, js string, f providers.Format, opts ...providers.Option) (*providers.Request, pipelineOutput) {
	t.Helper()
	o := runPipeline(t, processors.DefaultSpec(), []byte(js))
	r, err := providers.Build(o.messages, f, append([]providers.Option{providers.WithInput(o.input)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r, o
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// lastTurn returns the role and JSON of a body's last message or content.
func lastTurn(r *providers.Request) (string, string) {
	var turns []map[string]any
	switch r.Format {
	case providers.FormatGemini:
		turns = r.Body["contents"].([]map[string]any)
	default:
		turns = r.Body["messages"].([]map[string]any)
	}
	last := turns[len(turns)-1]
	return last["role"].(string), asJSON(last)
}

// TestPrefillByModel: Claude from 4.6 answers an assistant prefill with
// 400 ("Prefilling assistant messages returns a 400 error on Claude 4.6
// models", platform.claude.com whats-new-claude-4-6, "Prefill removal"),
// and Gemini 3 refuses a final model turn. A context that ends with the
// assistant's words ends, by default and for those models, with a user
// turn asking to continue; older models keep the prefill.
func TestPrefillByModel(t *testing.T) {
	const conv = `[{"id":"u1","role":"user","parentId":null,"content":"hi","createdAt":1},{"id":"a1","role":"assistant","parentId":"u1","content":"hello","createdAt":2}]`
	check := checks()
	for _, tc := range []struct {
		f       providers.Format
		profile providers.Profile
		prefill bool
	}{
		{providers.FormatAnthropic, providers.Profile{}, false},
		{providers.FormatAnthropic, providers.Profile{Model: "claude-opus-4-6"}, false},
		{providers.FormatAnthropic, providers.Profile{Model: "anthropic:claude-sonnet-4-6"}, false},
		{providers.FormatAnthropic, providers.Profile{Model: "claude-sonnet-4-5-20250929"}, true},
		{providers.FormatAnthropic, providers.Profile{Model: "claude-3-7-sonnet-latest"}, true},
		{providers.FormatAnthropic, providers.Profile{Model: "claude-sonnet-4-5", Prefill: providers.PrefillDrop}, false},
		{providers.FormatAnthropic, providers.Profile{Model: "claude-opus-4-6", Prefill: providers.PrefillKeep}, true},
		{providers.FormatGemini, providers.Profile{}, false},
		{providers.FormatGemini, providers.Profile{Model: "gemini-3-pro-preview"}, false},
		{providers.FormatGemini, providers.Profile{Model: "models/gemini-2.5-flash"}, true},
	} {
		r, _ := build(t, conv, tc.f, providers.WithProfile(tc.profile))
		role, last := lastTurn(r)
		if prefill := role == "assistant" || role == "model"; prefill != tc.prefill {
			t.Errorf("%s %+v: ends with %s, want prefill %v", tc.f, tc.profile, last, tc.prefill)
		}
		if !tc.prefill {
			if !strings.Contains(last, providers.ContinueReply) {
				t.Errorf("%s %+v: last turn %s, want %q", tc.f, tc.profile, last, providers.ContinueReply)
			}
			if err := check[tc.f](r.Body); err != nil {
				t.Errorf("%s %+v: %v", tc.f, tc.profile, err)
			}
		}
	}
}

// TestGeminiThoughtSignatures: Gemini 3 answers 400 to a function call of
// the current turn without its thoughtSignature ("When using Gemini 3
// models, you must pass back thought signatures during function calling",
// ai.google.dev/gemini-api/docs/thought-signatures). A signature the reply
// kept on tools[i].thoughtSignature is sent back on its functionCall part,
// through the pipeline's grouping of the call with its result; a call
// whose signature was not kept carries the documented fallback.
func TestGeminiThoughtSignatures(t *testing.T) {
	const conv = `[{"id":"u1","role":"user","content":"q1","parentId":null,"createdAt":1},
{"id":"a1","role":"assistant","parentId":"u1","content":"","tools":[{"id":"c1","identifier":"calc","apiName":"add","arguments":"{}","type":"default","thoughtSignature":"sig-1"}],"createdAt":2},
{"id":"t1","role":"tool","parentId":"a1","tool_call_id":"c1","content":"r1","plugin":{"identifier":"calc","apiName":"add","type":"default"},"createdAt":3},
{"id":"a1b","role":"assistant","parentId":"t1","content":"done1","createdAt":4},
{"id":"u2","role":"user","content":"q2","parentId":"a1b","createdAt":5},
{"id":"a2","role":"assistant","parentId":"u2","content":"","tools":[{"id":"c2","identifier":"calc","apiName":"add","arguments":"{}","type":"default"}],"createdAt":6},
{"id":"t2","role":"tool","parentId":"a2","tool_call_id":"c2","content":"r2","plugin":{"identifier":"calc","apiName":"add","type":"default"},"createdAt":7}]`
	r, _ := build(t, conv, providers.FormatGemini)
	body := asJSON(r.Body)
	for _, want := range []string{
		`{"functionCall":{"args":{},"id":"c1","name":"calc____add"},"thoughtSignature":"sig-1"}`,
		`{"functionCall":{"args":{},"id":"c2","name":"calc____add"},"thoughtSignature":"` + providers.SkipThoughtSignature + `"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
	if err := checks()[providers.FormatGemini](r.Body); err != nil {
		t.Error(err)
	}
	// Without signatures the current turn's call is refused.
	r, _ = build(t, conv, providers.FormatGemini, providers.WithProfile(providers.Profile{Signatures: providers.SignaturesDrop}))
	if strings.Contains(asJSON(r.Body), "thoughtSignature") {
		t.Errorf("signatures drop: %s", asJSON(r.Body))
	}
	if err := checks()[providers.FormatGemini](r.Body); err == nil || !strings.Contains(err.Error(), "thought_signature") {
		t.Errorf("the fake provider took a current-turn call without a signature: %v", err)
	}
}

// TestProviderFieldsSentBack: the fields a reply kept go back to the
// provider that wrote them: Anthropic's thinking blocks (with their
// signatures, first in the assistant message, as the API requires in a
// tool-use loop with thinking on), Gemini's text signature, and OpenAI
// Responses' reasoning items when the same model continues; none of them
// to another provider.
func TestProviderFieldsSentBack(t *testing.T) {
	msgs := func(pf string) []enginecore.Message {
		var m []enginecore.Message
		_ = json.Unmarshal([]byte(`[{"role":"user","content":"q"},
			{"role":"assistant","content":"a","reasoning":{"content":"hmm","signature":"s0","providerFields":`+pf+`}},
			{"role":"user","content":"more"}]`), &m)
		return m
	}
	for _, tc := range []struct {
		f        providers.Format
		pf       string
		model    string
		want     string
		wantNone string
	}{
		{providers.FormatAnthropic, `{"provider":"anthropic","thinking":[{"type":"thinking","thinking":"t1","signature":"s1"},{"type":"redacted_thinking","data":"d1"}]}`, "",
			`{"content":[{"signature":"s1","thinking":"t1","type":"thinking"},{"data":"d1","type":"redacted_thinking"},{"text":"a","type":"text"}],"role":"assistant"}`, ""},
		{providers.FormatGemini, `{"provider":"gemini","thoughtSignature":"g1"}`, "", `{"parts":[{"text":"a","thoughtSignature":"g1"}],"role":"model"}`, ""},
		{providers.FormatAnthropic, `{"provider":"gemini","thoughtSignature":"g1"}`, "", "", "g1"},
		{providers.FormatOpenAIResponses, `{"provider":"openai","model":"gpt-5.1","reasoningItems":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e1"}]}`, "openai:gpt-5.1",
			`{"encrypted_content":"e1","id":"rs_1","summary":[],"type":"reasoning"}`, ""},
		{providers.FormatOpenAIResponses, `{"provider":"openai","model":"gpt-5.1","reasoningItems":[{"type":"reasoning","id":"rs_1","summary":[]}]}`, "gpt-4.1", "", "rs_1"},
	} {
		m := msgs(tc.pf)
		// The pipeline's MessageContent turns a signed reasoning into a
		// thinking part; a reply from Anthropic keeps its blocks in
		// providerFields, which win.
		m[1]["content"] = []any{map[string]any{"type": "thinking", "thinking": "hmm", "signature": "s0"}, map[string]any{"type": "text", "text": "a"}}
		r, err := providers.Build(m, tc.f, providers.WithProfile(providers.Profile{Model: tc.model}))
		if err != nil {
			t.Fatal(err)
		}
		body := asJSON(r.Body)
		if tc.want != "" && !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: body lacks %s:\n%s", tc.f, tc.pf, tc.want, body)
		}
		if tc.wantNone != "" && strings.Contains(body, tc.wantNone) {
			t.Errorf("%s %s: body carries %s:\n%s", tc.f, tc.pf, tc.wantNone, body)
		}
		if strings.Contains(body, "thinking content") {
			t.Errorf("%s: a thinking part became text: %s", tc.f, body)
		}
		if err := checks()[tc.f](r.Body); err != nil {
			t.Errorf("%s: %v", tc.f, err)
		}
	}
}

// TestGeminiFunctionResponsesApart: Vertex AI answers 400 to function
// responses merged with other parts ("Please ensure that the number of
// function response parts is equal to the number of function call parts
// of the function call turn"), and contents alternate user and model. The
// responses get a content of their own; the user's next text follows a
// model content ToolResultsRead.
func TestGeminiFunctionResponsesApart(t *testing.T) {
	var m []enginecore.Message
	_ = json.Unmarshal([]byte(`[{"role":"user","content":"q"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"r1"},{"role":"tool","tool_call_id":"c2","content":"r2"},
		{"role":"user","content":"and now?"}]`), &m)
	r, err := providers.Build(m, providers.FormatGemini)
	if err != nil {
		t.Fatal(err)
	}
	contents := r.Body["contents"].([]map[string]any)
	roles := ""
	for _, c := range contents {
		roles += c["role"].(string) + " "
	}
	if roles != "user model user model user " {
		t.Fatalf("roles %s: %s", roles, asJSON(contents))
	}
	if got := asJSON(contents[2]["parts"]); strings.Contains(got, "and now?") || strings.Count(got, "functionResponse") != 2 {
		t.Errorf("responses content %s", got)
	}
	if got := asJSON(contents[3]); !strings.Contains(got, providers.ToolResultsRead) {
		t.Errorf("between: %s", got)
	}
	if err := checks()[providers.FormatGemini](r.Body); err != nil {
		t.Error(err)
	}
	merged, err := providers.Build(m, providers.FormatGemini, providers.WithProfile(providers.Profile{FunctionTurns: providers.FunctionTurnsMerged}))
	if err != nil {
		t.Fatal(err)
	}
	if err := checks()[providers.FormatGemini](merged.Body); err == nil {
		t.Errorf("the fake provider took responses merged with text: %s", asJSON(merged.Body))
	}
}

// TestAnthropicAssistantImagesAsNotes: Claude takes image blocks only in
// user messages (the Messages API: "image" content blocks are user
// content), so an assistant's image becomes a note, as for the other
// providers; the user's images stay images.
func TestAnthropicAssistantImagesAsNotes(t *testing.T) {
	var m []enginecore.Message
	_ = json.Unmarshal([]byte(`[{"role":"user","content":[{"type":"text","text":"draw"},{"type":"image_url","image_url":{"url":"https://x.test/in.png"}}]},
		{"role":"assistant","content":[{"type":"text","text":"here"},{"type":"image_url","image_url":{"url":"https://x.test/out.png"}}]},
		{"role":"user","content":"thanks"}]`), &m)
	r, err := providers.Build(m, providers.FormatAnthropic)
	if err != nil {
		t.Fatal(err)
	}
	msgs := r.Body["messages"].([]map[string]any)
	if got := asJSON(msgs[1]); got != `{"content":[{"text":"here","type":"text"},{"text":"[image: https://x.test/out.png]","type":"text"}],"role":"assistant"}` {
		t.Errorf("assistant: %s", got)
	}
	if got := asJSON(msgs[0]); !strings.Contains(got, `"type":"image"`) {
		t.Errorf("user: %s", got)
	}
	if err := checks()[providers.FormatAnthropic](r.Body); err != nil {
		t.Error(err)
	}
	kept, _ := providers.Build(m, providers.FormatAnthropic, providers.WithProfile(providers.Profile{AssistantImages: providers.AssistantImagesKeep}))
	if err := checks()[providers.FormatAnthropic](kept.Body); err == nil {
		t.Errorf("the fake provider took an assistant image block: %s", asJSON(kept.Body))
	}
}

// TestCallIDsSanitisedThenUnique: a tool_use id must match
// ^[a-zA-Z0-9_-]+$ (Anthropic) and no two calls of a request may share one
// (every provider pairs results by id). call.1 and call_1 are two calls:
// they keep two ids, and each result follows its own call.
func TestCallIDsSanitisedThenUnique(t *testing.T) {
	var m []enginecore.Message
	_ = json.Unmarshal([]byte(`[{"role":"user","content":"q"},
		{"role":"assistant","content":"","tool_calls":[{"id":"call.1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"second"},{"role":"tool","tool_call_id":"call.1","content":"first"}]`), &m)
	for _, f := range []providers.Format{providers.FormatOpenAIChat, providers.FormatOpenAIResponses, providers.FormatAnthropic, providers.FormatGemini} {
		r, err := providers.Build(m, f)
		if err != nil {
			t.Fatal(err)
		}
		chat := r.Messages
		calls := chat[1]["tool_calls"].([]any)
		id0, id1 := calls[0].(map[string]any)["id"], calls[1].(map[string]any)["id"]
		if id0 == id1 || id0 != "call_1" {
			t.Errorf("%s: ids %v and %v", f, id0, id1)
		}
		if chat[2]["tool_call_id"] != id0 || chat[2]["content"] != "first" || chat[3]["tool_call_id"] != id1 || chat[3]["content"] != "second" {
			t.Errorf("%s: results %s", f, asJSON(chat[2:]))
		}
		if err := checks()[f](r.Body); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestBudgetCountsWholeBody: a provider counts every field of the body,
// ids and the tools declarations included, and refuses a max_tokens past
// what the context window leaves ("input length and max_tokens exceed
// context limit"). A budgeted body counts at most its limit by
// BodyTokens, and an Anthropic body's max_tokens at most the window less
// the body.
func TestBudgetCountsWholeBody(t *testing.T) {
	long := strings.Repeat("x", 60)
	var m []enginecore.Message
	var js strings.Builder
	js.WriteString(`[{"role":"system","content":"be brief"}`)
	for i := range 30 {
		id := long + string(rune('a'+i%26)) + strings.Repeat("y", i)
		js.WriteString(`,{"role":"user","content":"question number ` + string(rune('a'+i%26)) + `"}`)
		js.WriteString(`,{"role":"assistant","content":"","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"tool_` + string(rune('a'+i%26)) + `_with_a_long_name","arguments":"{\"q\":\"some words\"}"}}]}`)
		js.WriteString(`,{"role":"tool","tool_call_id":"` + id + `","content":"ok"}`)
	}
	js.WriteString(`]`)
	if err := json.Unmarshal([]byte(js.String()), &m); err != nil {
		t.Fatal(err)
	}
	o200k, err := bpe.New("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []providers.Format{providers.FormatOpenAIChat, providers.FormatOpenAIResponses, providers.FormatAnthropic, providers.FormatGemini} {
		for _, c := range []providers.Counter{nil, o200k} {
			b := providers.Budget{MaxTokens: 1000, Reserve: 200, KeepTurns: 1, Counter: c}
			r, err := providers.Build(m, f, providers.WithBudget(b))
			if err != nil {
				t.Fatal(err)
			}
			n := providers.BodyTokens(r.Body, c)
			if n != r.Usage.Tokens || n > 800 || r.Usage.DroppedMessages == 0 {
				t.Errorf("%s: body %d tokens, usage %+v", f, n, r.Usage)
			}
		}
	}
	// The window without a reserve: max_tokens is what the body leaves,
	// not the default 4096.
	r, err := providers.Build(m, providers.FormatAnthropic, providers.WithBudget(providers.Budget{MaxTokens: 2000}))
	if err != nil {
		t.Fatal(err)
	}
	if mt := r.Body["max_tokens"].(int); mt < 1 || mt+r.Usage.Tokens > 2000 {
		t.Errorf("max_tokens %d with a body of %d tokens in a window of 2000", mt, r.Usage.Tokens)
	}
}

// TestWarnsUnflattenedGroups: a spec without the flatten processors hands
// a provider format group messages whose tool calls no format can carry
// (they would become user text): Build says so in Warnings. The default
// spec's output over the whole corpus warns of nothing.
func TestWarnsUnflattenedGroups(t *testing.T) {
	const conv = `[{"id":"u1","role":"user","content":"q1","parentId":null,"createdAt":1},
{"id":"a1","role":"assistant","parentId":"u1","content":"","tools":[{"id":"c1","identifier":"calc","apiName":"add","arguments":"{}","type":"default"}],"createdAt":2},
{"id":"t1","role":"tool","parentId":"a1","tool_call_id":"c1","content":"r1","plugin":{"identifier":"calc","apiName":"add","type":"default"},"createdAt":3},
{"id":"a1b","role":"assistant","parentId":"t1","content":"done1","createdAt":4}]`
	// A spec of the last step alone, which leaves group messages as they
	// are.
	spec := &processors.Spec{Name: "cleanup-only", Processors: []processors.ProcessorSpec{{Name: processors.NameMessageCleanup}}}
	identity := runPipeline(t, spec, []byte(conv))
	r, err := providers.Build(identity.messages, providers.FormatAnthropic)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "assistantGroup") || !strings.Contains(r.Warnings[0], "1 tool calls") {
		t.Errorf("warnings %q", r.Warnings)
	}
	for _, o := range corpus(t) {
		r, err := providers.Build(o.messages, providers.FormatGemini, providers.WithInput(o.input))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Warnings) > 0 {
			t.Errorf("%s: %q", o.name, r.Warnings)
		}
	}
}

// TestReusedCallIDsAnsweredByTheirOwnResults: a provider that reuses call
// ids across turns gets, for its later call, that call's real result,
// where the reference's ToolMessageReorder keeps one result an id and
// answers the later call with its synthetic failure. The pipeline's output
// keeps the reference's behaviour; the request pairs the k-th call of an
// id with the k-th result of it from the pipeline's input.
func TestReusedCallIDsAnsweredByTheirOwnResults(t *testing.T) {
	const conv = `[{"id":"u1","role":"user","content":"q1","parentId":null,"createdAt":1},
{"id":"a1","role":"assistant","parentId":"u1","content":"","tools":[{"id":"x","identifier":"calc","apiName":"add","arguments":"{}","type":"default"}],"createdAt":2},
{"id":"t1","role":"tool","parentId":"a1","tool_call_id":"x","content":"r1","plugin":{"identifier":"calc","apiName":"add","type":"default"},"createdAt":3},
{"id":"a1b","role":"assistant","parentId":"t1","content":"done1","createdAt":4},
{"id":"u2","role":"user","content":"q2","parentId":"a1b","createdAt":5},
{"id":"a2","role":"assistant","parentId":"u2","content":"","tools":[{"id":"x","identifier":"calc","apiName":"add","arguments":"{}","type":"default"}],"createdAt":6},
{"id":"t2","role":"tool","parentId":"a2","tool_call_id":"x","content":"r2","plugin":{"identifier":"calc","apiName":"add","type":"default"},"createdAt":7}]`
	for _, f := range []providers.Format{providers.FormatOpenAIChat, providers.FormatAnthropic, providers.FormatGemini, providers.FormatOpenAIResponses} {
		r, o := build(t, conv, f)
		if !strings.Contains(asJSON(o.messages), `"synthetic\":true`) {
			t.Fatalf("the pipeline's output no longer answers the reused id with the synthetic failure: %s", asJSON(o.messages))
		}
		var results []string
		for _, m := range r.Messages {
			if m["role"] == "tool" {
				results = append(results, m["content"].(string))
			}
		}
		if len(results) != 2 || results[0] != "r1" || results[1] != "r2" {
			t.Errorf("%s: results %q", f, results)
		}
		if strings.Contains(asJSON(r.Body), "synthetic") {
			t.Errorf("%s: body %s", f, asJSON(r.Body))
		}
		if err := checks()[f](r.Body); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// checks returns the fake provider's check of each format's body.
func checks() map[providers.Format]func(map[string]any) error {
	via := func(check func(map[string]any) error) func(map[string]any) error {
		return func(body map[string]any) error {
			// The checks read JSON values, as the provider does.
			var req map[string]any
			_ = json.Unmarshal([]byte(asJSON(body)), &req)
			return check(req)
		}
	}
	return map[providers.Format]func(map[string]any) error{
		providers.FormatOpenAIChat:      via(checkOpenAIChat),
		providers.FormatOpenAIResponses: via(checkOpenAIResponses),
		providers.FormatAnthropic:       via(checkAnthropic),
		providers.FormatGemini:          via(checkGemini),
	}
}
