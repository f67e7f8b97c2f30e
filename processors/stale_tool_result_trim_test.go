package processors_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// Builders of the upstream suite's messages.

func staleToolMsg(identifier, api, content string, extra map[string]any) enginecore.Message {
	m := enginecore.Message{"content": content, "id": "tool-" + api, "role": "tool", "tool_call_id": "call-" + api,
		"plugin": map[string]any{"apiName": api, "identifier": identifier}}
	for k, v := range extra {
		m[k] = v
	}
	return jsonRoundTrip(m)
}

func jsonRoundTrip(m enginecore.Message) enginecore.Message {
	b, _ := json.Marshal(m)
	var out enginecore.Message
	_ = json.Unmarshal(b, &out)
	return out
}

func readFileMsg(path, content string, loc []int) enginecore.Message {
	args := map[string]any{"path": path}
	state := map[string]any{"path": path}
	if loc != nil {
		args["loc"], state["loc"] = loc, loc
	}
	a, _ := json.Marshal(args)
	return staleToolMsg("lobe-local-system", "readFile", content, map[string]any{
		"plugin":      map[string]any{"apiName": "readFile", "arguments": string(a), "identifier": "lobe-local-system"},
		"pluginState": state,
	})
}

func writeFileMsg(path string) enginecore.Message {
	return staleToolMsg("lobe-local-system", "writeFile", "Successfully wrote to "+path, map[string]any{
		"plugin":      map[string]any{"apiName": "writeFile", "arguments": `{"path":"` + path + `"}`, "identifier": "lobe-local-system"},
		"pluginState": map[string]any{"path": path, "success": true},
	})
}

func padding(n int) []enginecore.Message {
	out := make([]enginecore.Message, n)
	for i := range out {
		out[i] = enginecore.Message{"content": "recent", "id": "pad", "role": "assistant"}
	}
	return out
}

func msgList(parts ...any) []enginecore.Message {
	var out []enginecore.Message
	for _, p := range parts {
		switch x := p.(type) {
		case enginecore.Message:
			out = append(out, x)
		case []enginecore.Message:
			out = append(out, x...)
		}
	}
	return out
}

func plain(id, role, content string, createdAt any) enginecore.Message {
	m := enginecore.Message{"content": content, "id": id, "role": role}
	if createdAt != nil {
		m["createdAt"] = createdAt
	}
	return m
}

func ip(n int) *int { return &n }

// testTrim is the upstream suite's createProcessor: keepRecentMessages 3,
// minTotalToolChars 0.
func testTrim(mod func(*processors.StaleToolResultTrimConfig)) *processors.StaleToolResultTrim {
	cfg := processors.StaleToolResultTrimConfig{KeepRecentMessages: ip(3), MinTotalToolChars: ip(0)}
	if mod != nil {
		mod(&cfg)
	}
	return processors.NewStaleToolResultTrim(cfg)
}

var t0 = time.Date(2026, 9, 20, 8, 0, 0, 0, time.UTC)

func iso(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }

// turnMessages is the upstream cache-warmth suite's conversation: a stale
// read, its write, filler, the previous turn's end and the trigger gap
// apart.
func turnMessages(staleChars int, gap time.Duration) []enginecore.Message {
	return msgList(readFileMsg("/a.ts", strings.Repeat("x", staleChars), []int{0, 200}), writeFileMsg("/a.ts"),
		plain("f1", "assistant", "filler 1", nil), plain("f2", "assistant", "filler 2", nil), plain("f3", "assistant", "filler 3", nil),
		plain("prev", "assistant", "previous turn done", iso(0)), plain("trigger", "user", "next task", iso(gap)), padding(3))
}

func content(m enginecore.Message) string { s, _ := m["content"].(string); return s }

// TestStaleToolResultTrim ports the upstream StaleToolResultTrimProcessor
// suite; each case names the upstream test it comes from. check gets the
// output messages and the staleToolResultTrim metadata (nil when absent).
func TestStaleToolResultTrim(t *testing.T) {
	bigDoc := plain("big-live-doc", "assistant", strings.Repeat("z", 500_000), nil)
	cases := []struct {
		upstream string
		p        *processors.StaleToolResultTrim
		in       []enginecore.Message
		check    func(t *testing.T, out []enginecore.Message, meta map[string]any)
	}{{
		upstream: "trims a readFile result superseded by a later write to the same path",
		p:        testTrim(nil),
		in:       msgList(readFileMsg("/a.ts", strings.Repeat("x", 5000), []int{0, 200}), writeFileMsg("/a.ts"), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			want := "[readFile result trimmed: /a.ts — superseded by a later write to this file. Call readFile again if you need the current content.]"
			if content(out[0]) != want || out[0]["tool_call_id"] != "call-readFile" || content(out[1]) != "Successfully wrote to /a.ts" {
				t.Fatalf("got %v", out[:2])
			}
			saved := 5000 - len([]rune(want)) // one em dash, in the BMP
			assertJSON(t, meta, `{"byRule":{"readSupersededByWrite":1},"cacheWarm":false,"savedChars":`+itoaTest(saved)+`,"trimmedMessages":1}`)
		},
	}, {
		upstream: "trims a readFile result whose range was fully re-read later",
		p:        testTrim(nil),
		in:       msgList(readFileMsg("/a.ts", strings.Repeat("y", 3000), []int{0, 100}), readFileMsg("/a.ts", strings.Repeat("z", 6000), []int{0, 200}), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, _ map[string]any) {
			if !strings.Contains(content(out[0]), "(lines 0-100) — the same range was read again later") || content(out[1]) != strings.Repeat("z", 6000) {
				t.Fatalf("got %.200v", out[:2])
			}
		},
	}, {
		upstream: "keeps complementary reads of the same file (partial overlap is not coverage)",
		p:        testTrim(nil),
		in:       msgList(readFileMsg("/a.ts", "first chunk", []int{0, 200}), readFileMsg("/a.ts", "second chunk", []int{200, 400}), padding(3)),
		check:    unchanged,
	}, {
		upstream: "trims stale browser snapshots outside the recency window",
		p:        testTrim(nil),
		in: msgList(staleToolMsg("lobe-browser", "snapshot", strings.Repeat("- button \"写作\" [ref=e1]\n", 100), nil),
			staleToolMsg("lobe-browser", "readPage", strings.Repeat("page text ", 100), nil), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			if !strings.Contains(content(out[0]), "stale page state") || !strings.Contains(content(out[1]), "stale page state") {
				t.Fatalf("got %v", out[:2])
			}
			assertJSON(t, meta["byRule"], `{"staleBrowserPage":2}`)
		},
	}, {
		upstream: "keeps the head and tail of old command output",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.CommandKeepChars = ip(100) }),
		in:       msgList(staleToolMsg("lobe-local-system", "runCommand", "HEAD-"+strings.Repeat("a", 2000)+"-TAIL", nil), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, _ map[string]any) {
			c := content(out[0])
			if !strings.HasPrefix(c, "HEAD-") || !strings.HasSuffix(c, "-TAIL") || !strings.Contains(c, "[... trimmed 1810 chars of old command output ...]") {
				t.Fatalf("got %q", c)
			}
		},
	}, {
		upstream: "trims old web-browsing results to a head excerpt",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.CrawlKeepChars = ip(200) }),
		in:       msgList(staleToolMsg("lobe-web-browsing", "crawlSinglePage", "<crawlResults>"+strings.Repeat("p", 5000)+"</crawlResults>", nil), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, _ map[string]any) {
			c := content(out[0])
			if !strings.HasPrefix(c, "<crawlResults>") || !strings.Contains(c, "trimmed") || len(c) >= 400 {
				t.Fatalf("got %q", c)
			}
		},
	}, {
		upstream: "never trims error results",
		p:        testTrim(nil),
		in:       msgList(staleToolMsg("lobe-browser", "snapshot", strings.Repeat("e", 5000), map[string]any{"pluginError": map[string]any{"message": "Script failed to execute"}}), padding(3)),
		check:    unchanged,
	}, {
		upstream: "never touches the recency window",
		p:        testTrim(nil),
		in:       msgList(padding(3), staleToolMsg("lobe-browser", "snapshot", strings.Repeat("recent snapshot ", 100), nil)),
		check:    unchanged,
	}, {
		upstream: "skips small histories entirely",
		p:        processors.NewStaleToolResultTrim(processors.StaleToolResultTrimConfig{MinTotalToolChars: ip(1_000_000)}),
		in:       msgList(readFileMsg("/a.ts", "short", []int{0, 10}), writeFileMsg("/a.ts"), padding(3)),
		check:    unchanged,
	}, {
		upstream: "does nothing when disabled",
		p:        processors.NewStaleToolResultTrim(processors.StaleToolResultTrimConfig{Enabled: new(bool), MinTotalToolChars: ip(0)}),
		in:       msgList(readFileMsg("/a.ts", strings.Repeat("x", 5000), nil), writeFileMsg("/a.ts")),
		check:    unchanged,
	}, {
		upstream: "never trims messages from the in-flight turn, and an in-flight write does not retroactively trim",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.KeepRecentMessages = ip(1) }),
		in: msgList(readFileMsg("/a.ts", strings.Repeat("x", 5000), []int{0, 200}), writeFileMsg("/a.ts"), plain("user-1", "user", "继续", nil),
			readFileMsg("/b.ts", strings.Repeat("y", 5000), []int{0, 200}), writeFileMsg("/b.ts"), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			if !strings.Contains(content(out[0]), "superseded by a later write") || content(out[3]) != strings.Repeat("y", 5000) || meta["trimmedMessages"] != 1.0 {
				t.Fatalf("got %.300v %v", out, meta)
			}
		},
	}, {
		upstream: "freezes the recency window at the turn boundary for the whole operation",
		p:        testTrim(nil),
		in: msgList(plain("m0", "assistant", "older turn", nil), staleToolMsg("lobe-browser", "snapshot", strings.Repeat("snap ", 500), nil),
			plain("m2", "assistant", "tail", nil), plain("user-1", "user", "start working", nil), padding(50)),
		check: unchanged,
	}, {
		upstream: "parses serialized string arguments when pluginState is absent",
		p:        testTrim(nil),
		in: msgList(
			staleToolMsg("lobe-local-system", "readFile", strings.Repeat("x", 5000), map[string]any{"plugin": map[string]any{"apiName": "readFile", "arguments": `{"path":"/legacy.ts"}`, "identifier": "lobe-local-system"}}),
			staleToolMsg("lobe-local-system", "writeFile", "Successfully wrote to /legacy.ts", map[string]any{"plugin": map[string]any{"apiName": "writeFile", "arguments": `{"path":"/legacy.ts"}`, "identifier": "lobe-local-system"}}),
			padding(3)),
		check: trimmedBy("superseded by a later write"),
	}, {
		upstream: "cache-warmth gate: trims when the gap exceeds the cache TTL (cold cache — trim is free)",
		p:        testTrim(nil),
		in:       turnMessages(5000, 10*time.Minute),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			trimmedBy("superseded by a later write")(t, out, meta)
			if meta["cacheWarm"] != false || meta["gapMs"] != 600_000.0 || meta["trimmedMessages"] != 1.0 {
				t.Fatalf("meta %v", meta)
			}
		},
	}, {
		upstream: "cache-warmth gate: skips the trim on a warm follow-up when savings are small relative to the payload",
		p:        testTrim(nil),
		in:       msgList(bigDoc, turnMessages(5000, time.Minute)),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			if content(out[1]) != strings.Repeat("x", 5000) || meta["cacheWarm"] != true || meta["gapMs"] != 60_000.0 ||
				meta["skippedReason"] != "warm-cache" || meta["savedChars"] != 0.0 || meta["trimmedMessages"] != 0.0 ||
				meta["potentialSavedChars"].(float64) <= 4000 || meta["gainEstimate"].(float64) <= 0 || meta["rewriteCostEstimate"].(float64) <= 0 {
				t.Fatalf("meta %v", meta)
			}
		},
	}, {
		upstream: "cache-warmth gate: still trims on a warm follow-up when savings clear the warm thresholds",
		p:        testTrim(nil),
		in:       turnMessages(400_000, time.Minute),
		check:    trimmedBy("superseded by a later write"),
	}, {
		upstream: "cache-warmth gate: reads numeric epoch-ms timestamps for the warmth check",
		p:        testTrim(nil),
		in: msgList(bigDoc, readFileMsg("/a.ts", strings.Repeat("x", 5000), []int{0, 200}), writeFileMsg("/a.ts"), padding(3),
			plain("prev", "assistant", "previous turn done", float64(t0.UnixMilli())), plain("trigger", "user", "next task", float64(t0.UnixMilli()+60_000)), padding(3)),
		check: func(t *testing.T, _ []enginecore.Message, meta map[string]any) {
			if meta["cacheWarm"] != true || meta["gapMs"] != 60_000.0 || meta["skippedReason"] != "warm-cache" {
				t.Fatalf("meta %v", meta)
			}
		},
	}, {
		upstream: "closed-history pinning: does not let in-flight tool output trip the minimum-size gate mid-turn",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.MinTotalToolChars = ip(10_000) }),
		in: msgList(readFileMsg("/a.ts", strings.Repeat("x", 3000), []int{0, 200}), writeFileMsg("/a.ts"), plain("u1", "user", "start", nil),
			staleToolMsg("lobe-local-system", "runCommand", strings.Repeat("y", 50_000), nil), padding(3)),
		check: unchanged,
	}, {
		upstream: "invalidation index hygiene: ignores failed writes when superseding reads",
		p:        testTrim(nil),
		in: msgList(readFileMsg("/a.ts", strings.Repeat("x", 5000), []int{0, 200}),
			staleToolMsg("lobe-local-system", "writeFile", "Error: disk full", map[string]any{
				"plugin":      map[string]any{"apiName": "writeFile", "arguments": `{"path":"/a.ts"}`, "identifier": "lobe-local-system"},
				"pluginError": map[string]any{"message": "disk full"}, "pluginState": map[string]any{"path": "/a.ts", "success": false}}),
			padding(3)),
		check: unchanged,
	}, {
		upstream: "invalidation index hygiene: treats an omitted loc as the default [0, 200] window",
		p:        testTrim(nil),
		in:       msgList(readFileMsg("/a.ts", strings.Repeat("x", 500), nil), readFileMsg("/a.ts", strings.Repeat("y", 500), nil), padding(3)),
		check:    trimmedBy("the same range was read again later"),
	}, {
		upstream: "invalidation index hygiene: a default-window re-read does not cover an explicit later range",
		p:        testTrim(nil),
		in:       msgList(readFileMsg("/a.ts", "middle chunk", []int{300, 400}), readFileMsg("/a.ts", "default window", nil), padding(3)),
		check:    unchanged,
	}, {
		upstream: "invalidation index hygiene: clears image attachments when an image read result is trimmed",
		p:        testTrim(nil),
		in: msgList(staleToolMsg("lobe-local-system", "readFile", "[Image: design.png]", map[string]any{
			"plugin":      map[string]any{"apiName": "readFile", "arguments": `{"path":"/design.png"}`, "identifier": "lobe-local-system"},
			"pluginState": map[string]any{"images": []any{map[string]any{"fileId": "f1", "mediaType": "image/png", "url": "https://files.example.com/x.png"}}, "path": "/design.png"}}),
			writeFileMsg("/design.png"), padding(3)),
		check: func(t *testing.T, out []enginecore.Message, meta map[string]any) {
			trimmedBy("superseded by a later write")(t, out, meta)
			assertJSON(t, out[0]["pluginState"], `{"path":"/design.png"}`)
		},
	}, {
		upstream: "invalidation index hygiene: rejects replacements that would grow the payload",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.CrawlKeepChars = ip(100) }),
		in:       msgList(staleToolMsg("lobe-web-browsing", "crawlSinglePage", strings.Repeat("p", 101), nil), padding(3)),
		check:    unchanged,
	}, {
		upstream: "cacheEconomicsForProvider: prices the warmth check with the active provider policy (anthropic)",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.Provider = "anthropic" }),
		in:       msgList(bigDoc, turnMessages(5000, 10*time.Minute)),
		check: func(t *testing.T, _ []enginecore.Message, meta map[string]any) {
			if meta["cacheWarm"] != false || meta["trimmedMessages"] != 1.0 {
				t.Fatalf("meta %v", meta)
			}
		},
	}, {
		upstream: "cacheEconomicsForProvider: prices the warmth check with the active provider policy (deepseek)",
		p:        testTrim(func(c *processors.StaleToolResultTrimConfig) { c.Provider = "deepseek" }),
		in:       msgList(bigDoc, turnMessages(5000, 10*time.Minute)),
		check: func(t *testing.T, _ []enginecore.Message, meta map[string]any) {
			if meta["cacheWarm"] != true || meta["skippedReason"] != "warm-cache" {
				t.Fatalf("meta %v", meta)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			out := process(t, tc.p, tc.in)
			meta, _ := out.Metadata["staleToolResultTrim"].(map[string]any)
			tc.check(t, out.Messages, meta)
		})
	}
}

func itoaTest(n int) string { b, _ := json.Marshal(n); return string(b) }

// unchanged checks that nothing was trimmed.
func unchanged(t *testing.T, out []enginecore.Message, meta map[string]any) {
	t.Helper()
	if n, _ := meta["trimmedMessages"].(float64); n != 0 {
		t.Fatalf("trimmed %v messages: %v", n, meta)
	}
}

func trimmedBy(notice string) func(*testing.T, []enginecore.Message, map[string]any) {
	return func(t *testing.T, out []enginecore.Message, meta map[string]any) {
		t.Helper()
		for _, m := range out {
			if strings.Contains(content(m), notice) {
				if meta["trimmedMessages"] != 1.0 {
					t.Fatalf("meta %v", meta)
				}
				return
			}
		}
		t.Fatalf("no message trimmed with %q", notice)
	}
}

// TestStaleToolResultTrimIdempotent ports "is idempotent — trimming an
// already-trimmed history is byte-stable" and the pinning test "does not
// flip the warm-gate decision as in-flight output grows".
func TestStaleToolResultTrimIdempotent(t *testing.T) {
	p := testTrim(nil)
	in := msgList(readFileMsg("/a.ts", strings.Repeat("x", 5000), []int{0, 200}), writeFileMsg("/a.ts"),
		staleToolMsg("lobe-browser", "snapshot", strings.Repeat("snap ", 500), nil), padding(3))
	first := process(t, p, in)
	second := process(t, p, first.Messages)
	assertJSON(t, second.Messages, js(first.Messages))
	if _, ok := second.Metadata["staleToolResultTrim"]; ok {
		t.Fatalf("second pass trimmed: %v", second.Metadata)
	}

	build := func(inFlight int) []enginecore.Message {
		return msgList(readFileMsg("/a.ts", strings.Repeat("x", 200_000), []int{0, 200}), writeFileMsg("/a.ts"),
			plain("f1", "assistant", "filler", nil), plain("f2", "assistant", "filler", nil), plain("f3", "assistant", "filler", nil),
			plain("prev", "assistant", "previous turn done", iso(0)), plain("trigger", "user", "next task", iso(time.Minute)),
			staleToolMsg("lobe-local-system", "runCommand", strings.Repeat("y", inFlight), nil), padding(3))
	}
	start := process(t, p, build(0))
	mid := process(t, p, build(2_000_000))
	if start.Metadata["staleToolResultTrim"].(map[string]any)["trimmedMessages"] != 1.0 ||
		mid.Metadata["staleToolResultTrim"].(map[string]any)["trimmedMessages"] != 1.0 ||
		content(mid.Messages[0]) != content(start.Messages[0]) {
		t.Fatalf("decision flipped: %v / %v", start.Metadata, mid.Metadata)
	}
}

// TestCacheEconomicsForProvider ports "returns provider-specific policies
// and falls back to Anthropic".
func TestCacheEconomicsForProvider(t *testing.T) {
	if got := processors.CacheEconomicsForProvider("anthropic"); got != (processors.CacheEconomics{ReadPrice: 0.1, TTLMs: 300_000, WritePrice: 1.25}) {
		t.Fatalf("anthropic: %+v", got)
	}
	if processors.CacheEconomicsForProvider("deepseek").TTLMs != 3_600_000 || processors.CacheEconomicsForProvider("openai").WritePrice != 1 {
		t.Fatal("provider table")
	}
	if processors.CacheEconomicsForProvider("some-new-provider") != processors.CacheEconomicsForProvider("anthropic") {
		t.Fatal("fallback")
	}
}

func TestStaleToolResultTrimConfig(t *testing.T) {
	p := build(t, processors.NameStaleToolResultTrim, map[string]any{"keepRecentMessages": 3.0, "minTotalToolChars": 0.0, "economics": map[string]any{"readPrice": 0.25, "ttlMs": 3_600_000.0, "writePrice": 1.0}})
	out := process(t, p, msgList(bigDocFor(), turnMessages(5000, 10*time.Minute)))
	if out.Metadata["staleToolResultTrim"].(map[string]any)["skippedReason"] != "warm-cache" {
		t.Fatalf("economics not applied: %v", out.Metadata)
	}
	err := configError(t, processors.NameStaleToolResultTrim, map[string]any{"keepRecentMessages": -1.0})
	if !errors.Is(err, processors.ErrInvalidConfig) || !strings.Contains(err.Error(), "keepRecentMessages: must be 0 or more") {
		t.Fatalf("err = %v", err)
	}
	err = configError(t, processors.NameStaleToolResultTrim, map[string]any{"economics": map[string]any{"ttl": 1.0}})
	if !errors.Is(err, processors.ErrInvalidConfig) || !strings.Contains(err.Error(), "economics.ttl: unknown field") {
		t.Fatalf("err = %v", err)
	}
}

func bigDocFor() enginecore.Message {
	return plain("big-live-doc", "assistant", strings.Repeat("z", 500_000), nil)
}
