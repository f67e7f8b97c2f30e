package conversation

import (
	"strconv"

	"github.com/convstream/convstream/internal/jsvalue"
)

// Token usage and performance figures live on messages in two shapes: nested
// (metadata.usage, metadata.performance) and the older flat one (token counts
// and timings directly on metadata). The helpers here read both and sum them
// across the steps of a run.

// usageFields are the token and cost figures of the flat shape.
var usageFields = [...]string{
	"acceptedPredictionTokens", "cost", "inputAudioTokens", "inputCacheMissTokens",
	"inputCachedTokens", "inputCitationTokens", "inputImageTokens", "inputTextTokens",
	"inputVideoTokens", "inputToolTokens", "inputWriteCacheTokens", "outputAudioTokens",
	"outputImageTokens", "outputReasoningTokens", "outputTextTokens", "rejectedPredictionTokens",
	"totalInputTokens", "totalOutputTokens", "totalTokens",
}

// performanceFields are the timing figures of the flat shape.
var performanceFields = [...]string{"duration", "latency", "tps", "ttft"}

// tokenFields are the usage figures summed across a run (cost is summed
// separately).
var tokenFields = [...]string{
	"acceptedPredictionTokens", "inputAudioTokens", "inputCacheMissTokens", "inputCachedTokens",
	"inputCitationTokens", "inputImageTokens", "inputTextTokens", "inputVideoTokens",
	"inputToolTokens", "inputWriteCacheTokens", "outputAudioTokens", "outputImageTokens",
	"outputReasoningTokens", "outputTextTokens", "rejectedPredictionTokens", "totalInputTokens",
	"totalOutputTokens", "totalTokens",
}

// isUsagePerformanceField reports whether a metadata key holds usage or
// performance data, in either shape.
func isUsagePerformanceField(k string) bool {
	switch k {
	case "acceptedPredictionTokens", "cost", "duration", "inputAudioTokens",
		"inputCacheMissTokens", "inputCachedTokens", "inputCitationTokens", "inputImageTokens",
		"inputTextTokens", "inputVideoTokens", "inputToolTokens", "inputWriteCacheTokens",
		"latency", "outputAudioTokens", "outputImageTokens", "outputReasoningTokens",
		"outputTextTokens", "performance", "rejectedPredictionTokens", "totalInputTokens",
		"totalOutputTokens", "totalTokens", "tps", "ttft", "usage":
		return true
	}
	return false
}

// spreadObject copies v as JavaScript's object spread would: an object's own
// fields, a string's or array's elements under their indices, nothing else.
func spreadObject(v any) map[string]any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = x
		}
		return out
	case string:
		out := make(map[string]any)
		i := 0
		for _, r := range utf16Units(t) {
			out[strconv.Itoa(i)] = r
			i++
		}
		return out
	case []any:
		out := make(map[string]any, len(t))
		for i, x := range t {
			out[strconv.Itoa(i)] = x
		}
		return out
	}
	return map[string]any{}
}

// utf16Units splits s into the one-unit strings a JavaScript spread yields;
// a character outside the BMP yields its two surrogate halves, which have
// no UTF-8 form, so it stays whole here.
func utf16Units(s string) []string {
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

// splitMetadata reads usage and performance from a message's metadata,
// nested shape first, flat fields filling the gaps. A nil result means none.
func splitMetadata(meta any) (usage, performance map[string]any) {
	md, isObj := meta.(map[string]any)
	if !truthy(meta) {
		return nil, nil
	}
	var u, p map[string]any
	if isObj {
		u = spreadObject(md["usage"])
		p = spreadObject(md["performance"])
	} else {
		u, p = map[string]any{}, map[string]any{}
	}
	hasU, hasP := len(u) > 0, len(p) > 0
	if isObj {
		for _, f := range usageFields {
			if v, ok := md[f]; ok {
				if _, set := u[f]; !set {
					u[f] = v
					hasU = true
				}
			}
		}
		for _, f := range performanceFields {
			if v, ok := md[f]; ok {
				if _, set := p[f]; !set {
					p[f] = v
					hasP = true
				}
			}
		}
	}
	if hasU {
		usage = u
	}
	if hasP {
		performance = p
	}
	return usage, performance
}

// otherMetadata returns the metadata fields that are not usage or
// performance data, in a new map.
func otherMetadata(meta any) map[string]any {
	out := map[string]any{}
	if md, ok := meta.(map[string]any); ok {
		for k, v := range md {
			if !isUsagePerformanceField(k) {
				out[k] = v
			}
		}
	}
	return out
}

// aggregateMetadata sums usage over the content blocks of a run: token
// counts and cost add up, ttft is the first one seen, tps is averaged,
// duration and latency add up.
func aggregateMetadata(blocks []map[string]any) (usage, performance map[string]any) {
	u := map[string]any{}
	p := map[string]any{}
	hasU, hasP := false, false
	tpsSum, tpsCount := 0.0, 0
	for _, b := range blocks {
		if bu, ok := b["usage"]; ok && truthy(bu) {
			if bm, ok := bu.(map[string]any); ok {
				for _, f := range tokenFields {
					if n, ok := bm[f].(float64); ok {
						u[f] = jsAdd(orZero(u[f]), n)
						hasU = true
					}
				}
				if n, ok := bm["cost"].(float64); ok {
					u["cost"] = jsAdd(orZero(u["cost"]), n)
					hasU = true
				}
			}
		}
		if bp, ok := b["performance"]; ok && truthy(bp) {
			if pm, ok := bp.(map[string]any); ok {
				if v, ok := pm["ttft"]; ok {
					if _, set := p["ttft"]; !set {
						p["ttft"] = v
						hasP = true
					}
				}
				if n, ok := pm["tps"].(float64); ok {
					tpsSum += n
					tpsCount++
					hasP = true
				}
				if v, ok := pm["duration"]; ok {
					p["duration"] = jsAdd(orZero(p["duration"]), v)
					hasP = true
				}
				if v, ok := pm["latency"]; ok {
					p["latency"] = jsAdd(orZero(p["latency"]), v)
					hasP = true
				}
			}
		}
	}
	if tpsCount > 0 {
		p["tps"] = tpsSum / float64(tpsCount)
	}
	if hasU {
		usage = u
	}
	if hasP {
		performance = p
	}
	return usage, performance
}

// orZero is JavaScript's `x || 0`.
func orZero(v any) any {
	if !truthy(v) {
		return 0.0
	}
	return v
}

// jsAdd is JavaScript's binary +: string concatenation when either side is
// a string (or an object), numeric addition otherwise.
func jsAdd(a, b any) any {
	_, as := a.(string)
	_, bs := b.(string)
	if as || bs || isObjectLike(a) || isObjectLike(b) {
		return jsvalue.String(a) + jsvalue.String(b)
	}
	return toNumber(a, true) + toNumber(b, true)
}

func isObjectLike(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
