package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/convstream/convstream/providers"
)

// TestProviderSDKsAcceptEveryRequest writes the default pipeline's output
// for every conversation of the conformance corpus in each format (with
// the default profile, and for Claude 4.6 and Gemini 3 by name), decodes
// each body into the official SDK's request type (OpenAI's and
// Anthropic's; Gemini's documented shape, strictly), checks that the SDK
// writes back exactly what it read, and sends it through the SDK's client
// to a local fake provider that enforces each API's rules on roles, tool
// pairing, alternation and empty content, and today's models' rules on
// prefills, thought signatures, function turns and assistant images.
func TestProviderSDKsAcceptEveryRequest(t *testing.T) {
	outputs := corpus(t)
	srv := fakeProvider(t)
	send := sdkChecks(t, srv)
	type variant struct {
		f    providers.Format
		opts []providers.Option
	}
	cached := providers.WithCacheBreakpoints(providers.CacheBreakpoints{System: true, Tools: true, LastUserTurns: 3, TTL: "1h"})
	accepted, total := 0, 0
	for _, v := range []variant{
		{providers.FormatOpenAIChat, nil}, {providers.FormatOpenAIResponses, nil}, {providers.FormatAnthropic, nil},
		{providers.FormatGemini, nil}, {providers.FormatAnthropic, []providers.Option{cached}},
		{providers.FormatAnthropic, []providers.Option{providers.WithProfile(providers.Profile{Model: "claude-opus-4-6"})}},
		{providers.FormatGemini, []providers.Option{providers.WithProfile(providers.Profile{Model: "gemini-3-pro-preview"})}},
	} {
		f := v.f
		for _, o := range outputs {
			total++
			r, err := providers.Build(o.messages, f, append([]providers.Option{providers.WithInput(o.input)}, v.opts...)...)
			if err != nil {
				t.Errorf("%s %s: %v", f, o.name, err)
				continue
			}
			b := withModel(t, r.Body)
			if err := send[f](b); err != nil {
				t.Errorf("%s %s: %v\n%s", f, o.name, err, b)
				continue
			}
			accepted++
		}
	}
	t.Logf("provider requests: %d/%d accepted (%d conversations, 4 formats, anthropic.messages with cache breakpoints, claude-opus-4-6, gemini-3-pro-preview)", accepted, total, len(outputs))
}

// sdkChecks returns, for each format, a check of a request body (with its
// model): decoded by the official SDK's request type and sent through the
// SDK's client to the fake provider srv.
func sdkChecks(t testing.TB, srv *httptest.Server) map[providers.Format]func(body []byte) error {
	ctx := context.Background()
	oai := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ant := anthropic.NewClient(aoption.WithBaseURL(srv.URL+"/"), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0))
	return map[providers.Format]func(body []byte) error{
		providers.FormatOpenAIChat: func(body []byte) error {
			var p openai.ChatCompletionNewParams
			if err := decodeExactly(body, &p); err != nil {
				return err
			}
			_, err := oai.Chat.Completions.New(ctx, p)
			return err
		},
		providers.FormatOpenAIResponses: func(body []byte) error {
			var p responses.ResponseNewParams
			if err := decodeExactly(body, &p); err != nil {
				return err
			}
			_, err := oai.Responses.New(ctx, p)
			return err
		},
		providers.FormatAnthropic: func(body []byte) error {
			var p anthropic.MessageNewParams
			if err := decodeExactly(body, &p); err != nil {
				return err
			}
			_, err := ant.Messages.New(ctx, p)
			return err
		},
		providers.FormatGemini: func(body []byte) error {
			var req geminiRequest
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				return fmt.Errorf("gemini request shape: %w", err)
			}
			resp, err := http.Post(srv.URL+"/v1beta/models/gemini:generateContent", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				var e struct{ Error struct{ Message string } }
				_ = json.NewDecoder(resp.Body).Decode(&e)
				return fmt.Errorf("%s: %s", resp.Status, e.Error.Message)
			}
			return nil
		},
	}
}

// withModel returns body with a model, as an orchestrator sends it.
func withModel(t testing.TB, body map[string]any) []byte {
	t.Helper()
	withModel := map[string]any{"model": "m"}
	for k, v := range body {
		withModel[k] = v
	}
	b, err := json.Marshal(withModel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeExactly decodes body into the SDK's params p and checks that the
// SDK marshals them back to the same JSON: a field the SDK did not take in
// would be lost there.
func decodeExactly(body []byte, p json.Marshaler) error {
	if err := json.Unmarshal(body, p); err != nil {
		return fmt.Errorf("SDK decode: %w", err)
	}
	again, err := p.MarshalJSON()
	if err != nil {
		return fmt.Errorf("SDK encode: %w", err)
	}
	var want, got any
	_ = json.Unmarshal(body, &want)
	if err := json.Unmarshal(again, &got); err != nil {
		return err
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("the SDK's params differ from the request:\nsent %s\nSDK  %s", body, again)
	}
	return nil
}

// geminiRequest is the documented shape of a generateContent request
// (ai.google.dev/api/generate-content), as far as Build writes it.
type geminiRequest struct {
	Model             string          `json:"model"`
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             *string `json:"text,omitempty"`
	ThoughtSignature *string `json:"thoughtSignature,omitempty"`
	InlineData       *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
	FileData *struct {
		MimeType string `json:"mimeType,omitempty"`
		FileURI  string `json:"fileUri"`
	} `json:"fileData,omitempty"`
	FunctionCall *struct {
		ID   string         `json:"id,omitempty"`
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	} `json:"functionResponse,omitempty"`
}
