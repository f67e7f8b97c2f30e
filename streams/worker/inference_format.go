package worker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
	"github.com/convstream/convstream/streams"
)

// decodeFormat reads an inference request's format, profile and budget.
func decodeFormat(data map[string]any, req *streams.InferenceRequest) *streams.RejectError {
	if v, present := data["format"]; present && v != nil {
		s, ok := v.(string)
		if !ok {
			return streams.Reject(streams.CodeBadData, "data.format must be a string")
		}
		req.Format = s
	}
	f, err := providers.ParseFormat(req.Format)
	if err != nil {
		return streams.Reject(streams.CodeBadData, "data.format: %v", err)
	}
	req.Format = string(f)
	if rej := decodeCache(data, req); rej != nil {
		return rej
	}
	if rej := decodeProfile(data, req); rej != nil {
		return rej
	}
	v, present := data["budget"]
	if !present || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return streams.Reject(streams.CodeBadData, "data.budget must be an object")
	}
	if f == providers.FormatRaw {
		return streams.Reject(streams.CodeBadData, "data.budget: not for format raw")
	}
	b := &streams.TokenBudget{}
	for name, dst := range map[string]*int{"maxTokens": &b.MaxTokens, "reserve": &b.Reserve, "keepTurns": &b.KeepTurns} {
		x, present := obj[name]
		if !present || x == nil {
			continue
		}
		n, rej := requestInt("data.budget."+name, x)
		if rej != nil {
			return rej
		}
		*dst = n
	}
	if x, present := obj["encoding"]; present && x != nil {
		if b.Encoding, ok = x.(string); !ok {
			return streams.Reject(streams.CodeBadData, "data.budget.encoding must be a string")
		}
		if b.Encoding != "" {
			if err := checkEncoding(b.Encoding); err != nil {
				return streams.Reject(streams.CodeBadData, "data.budget.encoding: %v", err)
			}
		}
	}
	if err := providerBudget(b, nil).Check(); err != nil {
		return streams.Reject(streams.CodeBadData, "data.%v", err)
	}
	req.Budget = b
	return nil
}

// decodeCache reads an inference request's cache breakpoints.
func decodeCache(data map[string]any, req *streams.InferenceRequest) *streams.RejectError {
	v, present := data["cache"]
	if !present || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return streams.Reject(streams.CodeBadData, "data.cache must be an object")
	}
	c := &providers.CacheBreakpoints{}
	for name, dst := range map[string]*bool{"system": &c.System, "tools": &c.Tools} {
		if x, present := obj[name]; present && x != nil {
			if *dst, ok = x.(bool); !ok {
				return streams.Reject(streams.CodeBadData, "data.cache.%s must be a boolean", name)
			}
		}
	}
	if x, present := obj["lastUserTurns"]; present && x != nil {
		var rej *streams.RejectError
		if c.LastUserTurns, rej = requestInt("data.cache.lastUserTurns", x); rej != nil {
			return rej
		}
	}
	if x, present := obj["ttl"]; present && x != nil {
		if c.TTL, ok = x.(string); !ok {
			return streams.Reject(streams.CodeBadData, "data.cache.ttl must be a string")
		}
	}
	if err := c.Check(); err != nil {
		return streams.Reject(streams.CodeBadData, "data.%v", err)
	}
	req.Cache = c
	return nil
}

// decodeProfile reads an inference request's model profile.
func decodeProfile(data map[string]any, req *streams.InferenceRequest) *streams.RejectError {
	v, present := data["profile"]
	if !present || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return streams.Reject(streams.CodeBadData, "data.profile must be an object")
	}
	p := &providers.Profile{}
	for name, dst := range map[string]*string{
		"model": &p.Model, "prefill": (*string)(&p.Prefill), "signatures": (*string)(&p.Signatures),
		"functionTurns": (*string)(&p.FunctionTurns), "assistantImages": (*string)(&p.AssistantImages),
	} {
		if x, present := obj[name]; present && x != nil {
			if *dst, ok = x.(string); !ok {
				return streams.Reject(streams.CodeBadData, "data.profile.%s must be a string", name)
			}
		}
	}
	if err := p.Check(); err != nil {
		return streams.Reject(streams.CodeBadData, "data.%v", err)
	}
	req.Profile = p
	return nil
}

// maxRequestInt is the largest integer an inference request's budget or
// cache fields take: 2^31, more than any model's context window.
const maxRequestInt = 1 << 31

// requestInt reads the integer field path of a request (a JSON number
// holding an integer, within ±maxRequestInt), or says what is wrong with
// it: an integer too large for the field is told so, naming the limit.
func requestInt(path string, v any) (int, *streams.RejectError) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int64:
		f = float64(n)
	case uint64:
		f = float64(n)
	case int:
		f = float64(n)
	default:
		return 0, streams.RejectAt(streams.CodeBadData, path, "must be an integer")
	}
	switch {
	case f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f):
		return 0, streams.RejectAt(streams.CodeBadData, path, "must be an integer")
	case f > maxRequestInt:
		return 0, streams.RejectAt(streams.CodeBadData, path, "%s is too large: at most %d", strconv.FormatFloat(f, 'f', -1, 64), maxRequestInt)
	case f < -maxRequestInt:
		return 0, streams.RejectAt(streams.CodeBadData, path, "%s is too small: at least %d", strconv.FormatFloat(f, 'f', -1, 64), -maxRequestInt)
	}
	return int(f), nil
}

func checkEncoding(name string) error {
	for _, e := range bpe.Encodings() {
		if e == name {
			return nil
		}
	}
	return fmt.Errorf("unknown encoding %q: want one of %v", name, bpe.Encodings())
}

// providerBudget returns b as providers take it, counting with c.
func providerBudget(b *streams.TokenBudget, c providers.Counter) providers.Budget {
	return providers.Budget{MaxTokens: b.MaxTokens, Reserve: b.Reserve, KeepTurns: b.KeepTurns, Counter: c}
}

// tokenCounters holds the exact counters the worker has made, one an
// encoding, made at the first request that asks for it (a vocabulary
// takes tens of megabytes).
type tokenCounters struct {
	mu sync.Mutex
	by map[string]*bpe.Counter
}

func (t *tokenCounters) get(encoding string) (*bpe.Counter, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.by[encoding]; ok {
		return c, nil
	}
	c, err := bpe.New(encoding)
	if err != nil {
		return nil, err
	}
	if t.by == nil {
		t.by = map[string]*bpe.Counter{}
	}
	t.by[encoding] = c
	return c, nil
}

// modelRequest writes msgs, the pipeline's output for input, in the
// request's format, for its profile, within its budget.
func (s *inferenceServer) modelRequest(msgs, input []enginecore.Message, req streams.InferenceRequest) (*providers.Request, error) {
	f, err := providers.ParseFormat(req.Format)
	if err != nil {
		return nil, err
	}
	opts := []providers.Option{providers.WithInput(input)}
	if req.Profile != nil {
		opts = append(opts, providers.WithProfile(*req.Profile))
	}
	if req.Cache != nil {
		opts = append(opts, providers.WithCacheBreakpoints(*req.Cache))
	}
	if b := req.Budget; b != nil {
		var counter providers.Counter
		if b.Encoding != "" {
			c, err := s.tokens.get(b.Encoding)
			if err != nil {
				return nil, err
			}
			counter = c
		}
		opts = append(opts, providers.WithBudget(providerBudget(b, counter)))
		if b.Reserve > 0 {
			opts = append(opts, providers.WithMaxTokens(b.Reserve))
		}
	}
	return providers.Build(msgs, f, opts...)
}

// formatFailure is the failure of a context that could not be written in
// its format: over its token budget (code over_budget), or a bug.
func formatFailure(requestID, conv, pipeline string, err error) streams.PipelineFailed {
	code := streams.FailedInternal
	if errors.Is(err, providers.ErrOverBudget) {
		code = streams.FailedOverBudget
	}
	return streams.PipelineFailed{RequestID: requestID, ConversationID: conv, Pipeline: pipeline, Code: code,
		Message: err.Error(), Cause: err.Error()}
}
