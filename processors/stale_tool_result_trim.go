package processors

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"time"
	"unicode/utf16"

	"github.com/convstream/convstream/enginecore"
)

// Tools whose results StaleToolResultTrim knows how to judge.
const (
	localSystemIdentifier = "lobe-local-system"
	browserIdentifier     = "lobe-browser"
)

// CacheEconomics is a provider's prompt-cache pricing, relative to the
// plain input price, and how long a cache entry lives.
type CacheEconomics struct {
	// ReadPrice is the price of a cached input token.
	ReadPrice float64 `json:"readPrice"`
	// TTLMs is how long, in milliseconds, an unused entry stays cached.
	TTLMs float64 `json:"ttlMs"`
	// WritePrice is the price of reprocessing an invalidated prefix.
	WritePrice float64 `json:"writePrice"`
}

// anthropicCache is Anthropic's five-minute ephemeral cache; unknown
// providers get it too, its short TTL being the most careful guess.
var anthropicCache = CacheEconomics{ReadPrice: 0.1, TTLMs: 300_000, WritePrice: 1.25}

// CacheEconomicsForProvider returns the cache pricing of a provider id
// (anthropic, bedrock, deepseek, google, openai), falling back to
// Anthropic's for any other.
func CacheEconomicsForProvider(provider string) CacheEconomics {
	switch provider {
	case "deepseek":
		// A long-lived disk cache without a write fee.
		return CacheEconomics{ReadPrice: 0.25, TTLMs: 3_600_000, WritePrice: 1}
	case "google":
		return CacheEconomics{ReadPrice: 0.25, TTLMs: 300_000, WritePrice: 1}
	case "openai":
		return CacheEconomics{ReadPrice: 0.5, TTLMs: 300_000, WritePrice: 1}
	}
	// anthropic, and bedrock, which serves Anthropic models.
	return anthropicCache
}

// StaleToolResultTrimConfig configures StaleToolResultTrim. Nil fields
// take the defaults given.
type StaleToolResultTrimConfig struct {
	// Enabled turns the processor on (default true).
	Enabled *bool `json:"enabled"`
	// Provider selects the cache pricing (CacheEconomicsForProvider);
	// Economics, then the Cache* fields, override it.
	Provider   string          `json:"provider"`
	Economics  *CacheEconomics `json:"economics"`
	CacheTTLMs *float64        `json:"cacheTtlMs"`
	// CacheReadPrice and CacheWritePrice are relative to the input price.
	CacheReadPrice  *float64 `json:"cacheReadPrice"`
	CacheWritePrice *float64 `json:"cacheWritePrice"`
	// CommandKeepChars is how much of an old command output's head, and
	// as much of its tail, is kept (default 500).
	CommandKeepChars *int `json:"commandKeepChars"`
	// CrawlKeepChars is how much of an old web search or crawl result's
	// head is kept (default 1000).
	CrawlKeepChars *int `json:"crawlKeepChars"`
	// KeepRecentMessages is how many messages before the latest user
	// message are never trimmed (default 20); the running turn never is.
	KeepRecentMessages *int `json:"keepRecentMessages"`
	// MinTotalToolChars is the size of the closed history's tool results
	// below which nothing is trimmed (default 100,000).
	MinTotalToolChars *int `json:"minTotalToolChars"`
	// WarmRemainingStepsEstimate is how many more model calls the turn is
	// assumed to make when weighing a trim against a warm cache (default 20).
	WarmRemainingStepsEstimate *float64 `json:"warmRemainingStepsEstimate"`
	// WarmSafetyMargin multiplies the rewrite cost in that check (default 1.5).
	WarmSafetyMargin *float64 `json:"warmSafetyMargin"`
}

// StaleToolResultTrim replaces the bodies of tool results that no longer
// help the model with short notices: file reads superseded by a later
// write or a later read of the same range, old browser page snapshots,
// and the middle of old web search and command outputs. Failed results
// are never trimmed.
//
// A trim must not break the provider's prompt cache needlessly, so:
// decisions depend only on messages up to the latest user message, which
// do not change while a turn runs (a trimmed message stays trimmed the
// same way in every later request, and trims only ever go one way); the
// running turn and the KeepRecentMessages before it are never touched;
// and when the previous turn ended within the cache TTL, the trim only
// happens if what the rest of the turn saves outweighs rewriting the
// cached prefix.
//
// It belongs after the flatten processors and before ToolCallProcessor.
// Lengths are in UTF-16 units, as the reference counts them.
//
// Metadata: staleToolResultTrim {byRule, cacheWarm, gapMs, savedChars,
// trimmedMessages}, plus the estimates and skippedReason "warm-cache"
// when the cache check declined; absent when nothing was a candidate.
type StaleToolResultTrim struct {
	enabled                    bool
	ttlMs, readPrice, write    float64
	commandKeep, crawlKeep     int
	keepRecent, minToolChars   int
	warmSteps, warmSafetyRatio float64
}

// NewStaleToolResultTrim returns a StaleToolResultTrim processor.
func NewStaleToolResultTrim(cfg StaleToolResultTrimConfig) *StaleToolResultTrim {
	econ := CacheEconomicsForProvider(cfg.Provider)
	if cfg.Economics != nil {
		econ = *cfg.Economics
	}
	return &StaleToolResultTrim{
		enabled:         deref(cfg.Enabled, true),
		ttlMs:           deref(cfg.CacheTTLMs, econ.TTLMs),
		readPrice:       deref(cfg.CacheReadPrice, econ.ReadPrice),
		write:           deref(cfg.CacheWritePrice, econ.WritePrice),
		commandKeep:     max(deref(cfg.CommandKeepChars, 500), 0),
		crawlKeep:       max(deref(cfg.CrawlKeepChars, 1000), 0),
		keepRecent:      max(deref(cfg.KeepRecentMessages, 20), 0),
		minToolChars:    deref(cfg.MinTotalToolChars, 100_000),
		warmSteps:       deref(cfg.WarmRemainingStepsEstimate, 20),
		warmSafetyRatio: deref(cfg.WarmSafetyMargin, 1.5),
	}
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Name returns "StaleToolResultTrimProcessor".
func (*StaleToolResultTrim) Name() string { return NameStaleToolResultTrim }

// trimCandidate is a message to trim and its new content.
type trimCandidate struct {
	index   int
	content string
	rule    string
}

// readWindow is a line range a readFile call returned, at a message index.
type readWindow struct {
	index      int
	start, end float64
}

// Process trims the stale tool results.
func (p *StaleToolResultTrim) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.enabled {
		return pc, nil
	}
	msgs := pc.Messages
	lastUser := -1
	for i, m := range msgs {
		if m["role"] == "user" {
			lastUser = i
		}
	}
	// Only the closed history before the boundary is judged, and only
	// from what it holds, so that the decisions stay the same for every
	// model call of the running turn (TestStaleToolResultTrim/"freezes the
	// recency window ...").
	boundary := len(msgs) - p.keepRecent
	if lastUser >= 0 {
		boundary = lastUser + 1 - p.keepRecent
	}
	boundary = min(max(boundary, 0), len(msgs))

	toolChars := 0
	for i, m := range msgs[:boundary] {
		if err := interrupted(ctx, i, boundary); err != nil {
			return nil, err
		}
		if s, ok := m["content"].(string); ok && m["role"] == "tool" {
			toolChars += utf16Len(s)
		}
	}
	if toolChars < p.minToolChars {
		return pc, nil
	}

	// What later results invalidate: writes per path and read windows per
	// path. A failed call invalidates nothing.
	lastWrite := make(map[string]int)
	reads := make(map[string][]readWindow)
	for i, m := range msgs[:boundary] {
		if err := interrupted(ctx, i, boundary); err != nil {
			return nil, err
		}
		if m["role"] != "tool" || truthy(m["pluginError"]) {
			continue
		}
		plugin := obj(m["plugin"])
		if plugin["identifier"] != localSystemIdentifier {
			continue
		}
		path := toolPath(m, plugin)
		if path == "" {
			continue
		}
		switch plugin["apiName"] {
		case "writeFile", "editFile":
			lastWrite[path] = i
		case "readFile":
			start, end := readWindowOf(m, plugin)
			reads[path] = append(reads[path], readWindow{index: i, start: start, end: end})
		}
	}

	var candidates []trimCandidate
	potential := 0
	for i, m := range msgs[:boundary] {
		if err := interrupted(ctx, i, boundary); err != nil {
			return nil, err
		}
		content, ok := m["content"].(string)
		if m["role"] != "tool" || !ok || content == "" || truthy(m["pluginError"]) {
			continue
		}
		trimmed, rule := p.replacement(m, content, i, lastWrite, reads)
		if rule == "" || trimmed == content {
			continue
		}
		// A notice longer than what it replaces is no trim; an image read
		// is, since its attachment goes too
		// (TestStaleToolResultTrim/"rejects replacements that would grow").
		if len(arr(dig(m, "pluginState", "images"))) == 0 && utf16Len(trimmed) >= utf16Len(content) {
			continue
		}
		candidates = append(candidates, trimCandidate{index: i, content: trimmed, rule: rule})
		potential += utf16Len(content) - utf16Len(trimmed)
	}
	if len(candidates) == 0 {
		return pc, nil
	}

	next := pc.Derive()
	meta := map[string]any{"byRule": map[string]any{}}
	next.Metadata["staleToolResultTrim"] = meta

	var gap float64
	hasGap := false
	if lastUser >= 1 {
		triggered, ok1 := epochMs(msgs[lastUser]["createdAt"])
		previous, ok2 := epochMs(msgs[lastUser-1]["createdAt"])
		if ok1 && ok2 {
			gap, hasGap = triggered-previous, true
			meta["gapMs"] = gap
		}
	}
	warm := hasGap && gap <= p.ttlMs
	meta["cacheWarm"] = warm
	if warm {
		// Price the rewrite from the payload up to the trigger only, so that
		// output appended during the turn cannot flip the decision
		// (TestStaleToolResultTrim/"does not flip the warm-gate decision").
		end := len(msgs)
		if lastUser >= 0 {
			end = lastUser + 1
		}
		total := 0
		for _, m := range msgs[:end] {
			if s, ok := m["content"].(string); ok {
				total += utf16Len(s)
			}
		}
		gain := p.warmSteps * float64(potential) * p.readPrice
		cost := float64(total-potential)*p.write - float64(total)*p.readPrice
		if gain <= cost*p.warmSafetyRatio {
			meta["gainEstimate"] = gain
			meta["potentialSavedChars"] = float64(potential)
			meta["rewriteCostEstimate"] = cost
			meta["savedChars"] = 0.0
			meta["skippedReason"] = "warm-cache"
			meta["trimmedMessages"] = 0.0
			return next, nil
		}
	}

	out := make([]enginecore.Message, len(msgs))
	copy(out, msgs)
	byRule := meta["byRule"].(map[string]any)
	for _, c := range candidates {
		m := maps.Clone(msgs[c.index])
		m["content"] = c.content
		// A trimmed image read loses its images, or MessageContentProcessor
		// would still send them.
		if state, ok := m["pluginState"].(map[string]any); ok && truthy(state["images"]) {
			state = maps.Clone(state)
			delete(state, "images")
			m["pluginState"] = state
		}
		out[c.index] = m
		n, _ := byRule[c.rule].(float64)
		byRule[c.rule] = n + 1
	}
	next.Messages = out
	meta["savedChars"] = float64(potential)
	meta["trimmedMessages"] = float64(len(candidates))
	return next, nil
}

// replacement returns the new content of a tool result and the rule that
// trims it, or an empty rule when the result stays.
func (p *StaleToolResultTrim) replacement(m enginecore.Message, content string, index int, lastWrite map[string]int, reads map[string][]readWindow) (string, string) {
	plugin := obj(m["plugin"])
	api, _ := plugin["apiName"].(string)
	switch identifier := plugin["identifier"]; {
	case identifier == localSystemIdentifier && api == "readFile":
		path := toolPath(m, plugin)
		if path == "" {
			return "", ""
		}
		if w, ok := lastWrite[path]; ok && w > index {
			return "[readFile result trimmed: " + path + " — superseded by a later write to this file. Call readFile again if you need the current content.]", "readSupersededByWrite"
		}
		start, end := readWindowOf(m, plugin)
		for _, w := range reads[path] {
			if w.index > index && w.start <= start && w.end >= end {
				return "[readFile result trimmed: " + path + " (lines " + formatNumber(start) + "-" + formatNumber(end) + ") — the same range was read again later. Refer to the newer read, or call readFile again if needed.]", "readSupersededByRead"
			}
		}
	case identifier == browserIdentifier && (api == "snapshot" || api == "readPage"):
		return "[browser " + api + " result trimmed — stale page state. Take a new snapshot if you need the current page.]", "staleBrowserPage"
	case identifier == webBrowsingIdentifier && (api == "search" || api == "crawlSinglePage" || api == "crawlMultiPages"):
		units := utf16.Encode([]rune(content))
		if len(units) <= p.crawlKeep {
			return "", ""
		}
		return string(utf16.Decode(units[:p.crawlKeep])) + "\n[... trimmed " + itoa(len(units)-p.crawlKeep) + " chars of stale web-browsing result. Search or crawl again if you need the full content.]", "staleCrawlResult"
	case identifier == localSystemIdentifier && (api == "runCommand" || api == "getCommandOutput"):
		units := utf16.Encode([]rune(content))
		if len(units) <= 2*p.commandKeep {
			return "", ""
		}
		head := string(utf16.Decode(units[:p.commandKeep]))
		tail := string(utf16.Decode(units[len(units)-p.commandKeep:]))
		return head + "\n[... trimmed " + itoa(len(units)-2*p.commandKeep) + " chars of old command output ...]\n" + tail, "oldCommandOutput"
	}
	return "", ""
}

func itoa(n int) string { return formatNumber(float64(n)) }

// toolArguments returns a tool call's arguments as an object; on the
// wire they are the JSON text the model wrote, older rows hold the object.
func toolArguments(plugin map[string]any) map[string]any {
	switch a := plugin["arguments"].(type) {
	case map[string]any:
		return a
	case string:
		var out map[string]any
		if json.Unmarshal([]byte(a), &out) == nil {
			return out
		}
	}
	return nil
}

// toolPath is the file a local-system result concerns: its state's path,
// else the path (or file_path) argument of the call.
func toolPath(m enginecore.Message, plugin map[string]any) string {
	if p, ok := dig(m, "pluginState", "path").(string); ok && p != "" {
		return p
	}
	args := toolArguments(plugin)
	p := args["path"]
	if p == nil {
		p = args["file_path"]
	}
	s, _ := p.(string)
	return s
}

// readWindowOf is the line range a readFile call returned: its explicit
// loc, everything when it asked for the full content, else the service's
// default of the first 200 lines.
func readWindowOf(m enginecore.Message, plugin map[string]any) (float64, float64) {
	loc := arr(dig(m, "pluginState", "loc"))
	args := toolArguments(plugin)
	if len(loc) != 2 {
		loc = arr(args["loc"])
	}
	if len(loc) == 2 {
		return lineNumber(loc[0]), lineNumber(loc[1])
	}
	if truthy(args["fullContent"]) {
		return math.Inf(-1), math.Inf(1)
	}
	return 0, 200
}

// lineNumber reads a loc bound; what is not a number compares false with
// everything, as NaN does.
func lineNumber(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// epochMs reads a createdAt: epoch milliseconds or an ISO 8601 string.
func epochMs(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, false
		}
		return x, true
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return 0, false
		}
		return float64(t.UnixMilli()), true
	}
	return 0, false
}

func (d deps) staleToolResultTrim(raw map[string]any) (enginecore.Processor, error) {
	var cfg StaleToolResultTrimConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"commandKeepChars", cfg.CommandKeepChars}, {"crawlKeepChars", cfg.CrawlKeepChars}, {"keepRecentMessages", cfg.KeepRecentMessages}} {
		if f.v != nil && *f.v < 0 {
			return nil, fieldErr(f.name, "must be 0 or more, got %d", *f.v)
		}
	}
	return NewStaleToolResultTrim(cfg), nil
}
