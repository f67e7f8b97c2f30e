package providers

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/convstream/convstream/enginecore"
)

func msgs(t *testing.T, js string) []enginecore.Message {
	t.Helper()
	var out []enginecore.Message
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func chat(t *testing.T, js string) string {
	t.Helper()
	r, err := Build(msgs(t, js), FormatOpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r.Messages)
	return string(b)
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"compare resolves to its active column",
			`[{"role":"user","content":"q"},{"role":"compare","content":"","activeColumnId":"b1","columns":[[{"id":"a1","role":"assistant","content":"A"}],[{"id":"b1","role":"assistant","content":"B"}]]}]`,
			`[{"content":"q","role":"user"},{"content":"B","role":"assistant"}]`},
		{"compare without activeColumnId takes the column marked active",
			`[{"role":"compare","content":"","columns":[[{"id":"a1","role":"assistant","content":"A"}],[{"id":"b1","role":"assistant","content":"B","metadata":{"activeColumn":true}}]]}]`,
			`[{"content":"B","role":"assistant"}]`},
		{"compare with nothing marked takes the first column",
			`[{"role":"compare","content":"","columns":[[{"id":"a1","role":"assistant","content":"A"}],[{"id":"b1","role":"assistant","content":"B"}]]}]`,
			`[{"content":"A","role":"assistant"}]`},
		{"an unknown role becomes the user's",
			`[{"role":"weird","content":"hello"}]`,
			`[{"content":"hello","role":"user"}]`},
		{"a call without a result is answered",
			`[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]},{"role":"user","content":"next"}]`,
			`[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c1","type":"function"}]},{"content":"` + MissingResult + `","role":"tool","tool_call_id":"c1"},{"content":"next","role":"user"}]`},
		{"a result without a call becomes the user's",
			`[{"role":"tool","tool_call_id":"zz","name":"search","content":"found"}]`,
			`[{"content":"[result of search, whose call is not in this context]\nfound","role":"user"}]`},
		{"a result moves up to follow its call",
			`[{"role":"assistant","content":"x","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"u"},{"role":"tool","tool_call_id":"c1","content":"r"}]`,
			`[{"content":"x","role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c1","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"c1"},{"content":"u","role":"user"}]`},
		{"a repeated call id is made unique",
			`[{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f"}},{"id":"c","function":{"name":"g"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]`,
			`[{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c","type":"function"},{"function":{"arguments":"{}","name":"g"},"id":"c__dup2","type":"function"}]},{"content":"r","role":"tool","tool_call_id":"c"},{"content":"` + MissingResult + `","role":"tool","tool_call_id":"c__dup2"}]`},
		{"an image in a system message becomes a note",
			`[{"role":"system","content":[{"type":"text","text":"s"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`,
			`[{"content":"s\n\n[image: inline image/png]","role":"system"}]`},
		{"an unknown part becomes text naming it",
			`[{"role":"user","content":[{"type":"audio","data":"x"}]}]`,
			`[{"content":"[audio content: {\"data\":\"x\",\"type\":\"audio\"}]","role":"user"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chat(t, tc.in); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func body(t *testing.T, f Format, js string, opts ...Option) map[string]any {
	t.Helper()
	r, err := Build(msgs(t, js), f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func TestAnthropicAlternatesAndTrims(t *testing.T) {
	got := body(t, FormatAnthropic, `[{"role":"system","content":"s1"},{"role":"assistant","content":"hi"},{"role":"system","content":"s2"},
		{"role":"assistant","content":"  "},{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"prefill \n"}]`,
		WithProfile(Profile{Prefill: PrefillKeep}))
	want := map[string]any{
		"max_tokens": float64(DefaultMaxTokens),
		"system":     []any{map[string]any{"type": "text", "text": "s1\n\ns2"}},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": ContinuePrompt}}},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "hi"}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "text", "text": "b"}}},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "prefill"}}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", g, w)
	}
}

func TestImagesByFormat(t *testing.T) {
	in := `[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}},{"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}}]}]`
	for f, want := range map[Format]string{
		FormatOpenAIChat:      `{"messages":[{"content":[{"text":"look","type":"text"},{"image_url":{"url":"data:image/png;base64,QUJD"},"type":"image_url"},{"image_url":{"url":"https://x.test/a.jpg"},"type":"image_url"}],"role":"user"}]}`,
		FormatOpenAIResponses: `{"input":[{"content":[{"text":"look","type":"input_text"},{"detail":"auto","image_url":"data:image/png;base64,QUJD","type":"input_image"},{"detail":"auto","image_url":"https://x.test/a.jpg","type":"input_image"}],"role":"user","type":"message"}]}`,
		FormatAnthropic:       `{"max_tokens":4096,"messages":[{"content":[{"text":"look","type":"text"},{"source":{"data":"QUJD","media_type":"image/png","type":"base64"},"type":"image"},{"source":{"type":"url","url":"https://x.test/a.jpg"},"type":"image"}],"role":"user"}]}`,
		FormatGemini:          `{"contents":[{"parts":[{"text":"look"},{"inlineData":{"data":"QUJD","mimeType":"image/png"}},{"fileData":{"fileUri":"https://x.test/a.jpg","mimeType":"image/jpeg"}}],"role":"user"}]}`,
	} {
		b, _ := json.Marshal(body(t, f, in))
		if string(b) != want {
			t.Errorf("%s:\ngot  %s\nwant %s", f, b, want)
		}
	}
}

func TestRawIsUnchanged(t *testing.T) {
	in := msgs(t, `[{"role":"compare","columns":[],"content":"x"}]`)
	r, err := Build(in, FormatRaw)
	if err != nil || r.Body != nil || !reflect.DeepEqual(r.Messages, in) {
		t.Fatalf("raw: %+v %v", r, err)
	}
}

func TestParseFormat(t *testing.T) {
	if f, err := ParseFormat(""); f != FormatOpenAIChat || err != nil {
		t.Errorf("default: %q %v", f, err)
	}
	for _, f := range Formats() {
		if g, err := ParseFormat(string(f)); g != f || err != nil {
			t.Errorf("%s: %q %v", f, g, err)
		}
	}
	if _, err := ParseFormat("openai"); err == nil {
		t.Error("openai: no error")
	}
}

func TestRepeatedCallIDsAcrossTurns(t *testing.T) {
	got := chat(t, `[{"role":"assistant","content":"1","tool_calls":[{"id":"c","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c","content":"r1"},
		{"role":"assistant","content":"2","tool_calls":[{"id":"c","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"c","content":"r2"}]`)
	want := `[{"content":"1","role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c","type":"function"}]},{"content":"r1","role":"tool","tool_call_id":"c"},` +
		`{"content":"2","role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c__dup2","type":"function"}]},{"content":"r2","role":"tool","tool_call_id":"c__dup2"}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
