package processors

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// webBrowsingIdentifier is the built-in web browsing tool.
const webBrowsingIdentifier = "lobe-web-browsing"

// HistoricalWebSearchResultFilter removes web search calls and their raw
// results from the turns before the latest user message. A search result
// serves the turn that asked for it; replayed in later turns it costs
// tokens and time. The assistant's answer, with its search citations,
// stays. The current turn (from the last user message on) is untouched.
//
// Metadata: historicalWebSearchResultFilter {removedToolMessages,
// strippedAssistantMessages, strippedToolCalls}, when there is history
// before the latest user message.
type HistoricalWebSearchResultFilter struct{}

// NewHistoricalWebSearchResultFilter returns a
// HistoricalWebSearchResultFilter processor.
func NewHistoricalWebSearchResultFilter() *HistoricalWebSearchResultFilter {
	return &HistoricalWebSearchResultFilter{}
}

// Name returns "HistoricalWebSearchResultFilter".
func (*HistoricalWebSearchResultFilter) Name() string { return NameHistoricalWebSearchResultFilter }

// Process filters the historical web searches.
func (*HistoricalWebSearchResultFilter) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	latestUser := -1
	for i := len(pc.Messages) - 1; i >= 0; i-- {
		if pc.Messages[i]["role"] == "user" {
			latestUser = i
			break
		}
	}
	if latestUser <= 0 {
		return pc, nil
	}

	next := pc.Derive()
	callIDs := make(map[string]bool)
	strippedCalls := 0
	// Calls are stripped first so that their ids are known when the
	// results are filtered.
	stripped, strippedMessages, err := mapMessages(ctx, pc.Messages[:latestUser], func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "assistant" {
			return m, false
		}
		out, n := stripWebSearchCalls(m, callIDs)
		strippedCalls += n
		return out, n > 0
	})
	if err != nil {
		return nil, err
	}

	kept := make([]enginecore.Message, 0, len(pc.Messages))
	for i, m := range stripped {
		if err := interrupted(ctx, i, len(stripped)); err != nil {
			return nil, err
		}
		if m["role"] == "tool" && (callIDs[jsString(orEmpty(m["tool_call_id"]))] ||
			isWebSearchPayload(m["plugin"]) || isWebSearchToolName(m["name"])) {
			continue
		}
		kept = append(kept, m)
	}
	removed := len(stripped) - len(kept)
	next.Messages = append(kept, pc.Messages[latestUser:]...)
	next.Metadata["historicalWebSearchResultFilter"] = map[string]any{
		"removedToolMessages":       float64(removed),
		"strippedAssistantMessages": float64(strippedMessages),
		"strippedToolCalls":         float64(strippedCalls),
	}
	return next, nil
}

// stripWebSearchCalls removes web search entries from an assistant
// message's tools and tool_calls, recording their ids in callIDs. It
// returns the message to keep and how many calls it removed.
func stripWebSearchCalls(m enginecore.Message, callIDs map[string]bool) (enginecore.Message, int) {
	var out enginecore.Message
	removed := 0
	replace := func(key string, all, kept []any) {
		if len(kept) == len(all) {
			return
		}
		if out == nil {
			out = maps.Clone(m)
		}
		removed += len(all) - len(kept)
		if len(kept) > 0 {
			out[key] = kept
		} else {
			delete(out, key)
		}
	}
	if tools, ok := m["tools"].([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(tools), func(t any) bool {
			if !isWebSearchPayload(t) {
				return false
			}
			if id := dig(t, "id"); truthy(id) {
				callIDs[jsString(id)] = true
			}
			return true
		})
		replace("tools", tools, kept)
	}
	if calls, ok := m["tool_calls"].([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(calls), func(c any) bool {
			if !callIDs[jsString(orEmpty(dig(c, "id")))] && !isWebSearchToolName(dig(c, "function", "name")) {
				return false
			}
			if id := dig(c, "id"); truthy(id) {
				callIDs[jsString(id)] = true
			}
			return true
		})
		replace("tool_calls", calls, kept)
	}
	if out == nil {
		return m, 0
	}
	return out, removed
}

// isWebSearchPayload reports whether a tool entry or a result's plugin
// describes a web search: a search API of the web browsing tool, or the
// web_search API that older and imported payloads use.
func isWebSearchPayload(v any) bool {
	tool, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if tool["identifier"] == webBrowsingIdentifier {
		api, ok := tool["apiName"].(string)
		return ok && strings.Contains(strings.ToLower(api), "search")
	}
	return tool["apiName"] == "web_search"
}

// isWebSearchToolName reports whether a function name, as the model saw
// it, calls a web search.
func isWebSearchToolName(v any) bool {
	name, ok := v.(string)
	if !ok {
		return false
	}
	prefix := webBrowsingIdentifier + toolNameSeparator
	return name == "web_search" || strings.HasPrefix(name, prefix+"search") || strings.HasPrefix(name, prefix+"web_search")
}

// orEmpty is JavaScript's `v ?? ""`.
func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func (d deps) historicalWebSearchResultFilter(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewHistoricalWebSearchResultFilter())
}
