package models

import (
	"fmt"
	"net/http"
	"os"
	"strings"
)

// An Option changes how Open makes a model.
type Option func(*openOptions)

type openOptions struct {
	getenv  func(string) string
	hc      *http.Client
	retry   Retry
	builtin BuiltinConfig
}

// WithGetenv sets where keys and base URLs are read (default os.Getenv).
func WithGetenv(getenv func(string) string) Option { return func(o *openOptions) { o.getenv = getenv } }

// WithHTTPClient sets the HTTP client of the providers' calls.
func WithHTTPClient(hc *http.Client) Option { return func(o *openOptions) { o.hc = hc } }

// WithRetry sets how refused calls are tried again (default
// DefaultRetry; Retries 0: never).
func WithRetry(r Retry) Option { return func(o *openOptions) { o.retry = r } }

// WithBuiltin sets what "builtin" writes (default DefaultBuiltinConfig).
func WithBuiltin(cfg BuiltinConfig) Option { return func(o *openOptions) { o.builtin = cfg } }

// Open returns the model spec names:
//
//   - "builtin": Builtin;
//   - "openai:MODEL": OpenAI, with OPENAI_API_KEY (or the file
//     OPENAI_API_KEY_FILE names) and OPENAI_BASE_URL for another server
//     that speaks the API (vLLM, Ollama, LiteLLM), which may need no key;
//   - "anthropic:MODEL": Anthropic, with ANTHROPIC_API_KEY(_FILE) and
//     ANTHROPIC_BASE_URL;
//   - "gemini:MODEL": Gemini, with GEMINI_API_KEY(_FILE) (or
//     GOOGLE_API_KEY) and GEMINI_BASE_URL.
//
// Keys are read from the environment or a file only, so that they appear
// in no command line and no log. Provider models are tried again as
// WithRetry says.
func Open(spec string, opts ...Option) (Model, error) {
	o := openOptions{getenv: os.Getenv, retry: DefaultRetry(), builtin: DefaultBuiltinConfig()}
	for _, opt := range opts {
		opt(&o)
	}
	if spec == "builtin" {
		return NewBuiltin(o.builtin)
	}
	provider, model, ok := strings.Cut(spec, ":")
	if !ok || model == "" {
		return nil, fmt.Errorf("models: %q: want builtin, openai:MODEL, anthropic:MODEL or gemini:MODEL", spec)
	}
	var m Model
	switch provider {
	case "openai":
		key, err := readKey(o.getenv, "OPENAI_API_KEY")
		if err != nil {
			return nil, err
		}
		base := o.getenv("OPENAI_BASE_URL")
		if key == "" && base == "" {
			return nil, errNoKey("openai", "OPENAI_API_KEY")
		}
		m = NewOpenAI(model, key, base, o.hc)
	case "anthropic":
		key, err := readKey(o.getenv, "ANTHROPIC_API_KEY")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, errNoKey("anthropic", "ANTHROPIC_API_KEY")
		}
		m = NewAnthropic(model, key, o.getenv("ANTHROPIC_BASE_URL"), o.hc)
	case "gemini":
		key, err := readKey(o.getenv, "GEMINI_API_KEY")
		if err != nil {
			return nil, err
		}
		if key == "" {
			key = o.getenv("GOOGLE_API_KEY")
		}
		if key == "" {
			return nil, errNoKey("gemini", "GEMINI_API_KEY")
		}
		m = NewGemini(model, key, o.getenv("GEMINI_BASE_URL"), o.hc)
	default:
		return nil, fmt.Errorf("models: %q: unknown provider %q: want openai, anthropic or gemini", spec, provider)
	}
	return WithRetries(m, o.retry), nil
}

// readKey returns the key in the variable env, or in the file that
// env_FILE names (its content without surrounding white space).
func readKey(getenv func(string) string, env string) (string, error) {
	if k := getenv(env); k != "" {
		return k, nil
	}
	name := getenv(env + "_FILE")
	if name == "" {
		return "", nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		// The error names the file, never its content.
		return "", fmt.Errorf("models: %s_FILE: %w", env, err)
	}
	return strings.TrimSpace(string(b)), nil
}
