package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
)

// TestWorkerHelpGrouped: -help lists the flags by topic, every flag once,
// each default once, sizes in their units.
func TestWorkerHelpGrouped(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseFlags([]string{"-help"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	out := help.String()
	last := -1
	for _, topic := range []string{"\nNATS connection:", "\nEmbedded server", "\nStorage", "\nConversation limits:", "\nInference:", "\nCaching:", "\nProcessing:", "\nTelemetry", "\nOther:", "\nRuntime tuning"} {
		i := strings.Index(out, topic)
		if i <= last {
			t.Errorf("topic %q missing or out of order", topic)
		}
		last = i
	}
	entries := regexp.MustCompile(`(?m)^  -(\S+)[^\n]*\n[^\n]*`).FindAllStringSubmatch(out, -1)
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e[1]] {
			t.Errorf("-%s listed twice", e[1])
		}
		seen[e[1]] = true
		if n := strings.Count(e[0], "default"); n > 1 {
			t.Errorf("-%s shows its default %d times:\n%s", e[1], n, e[0])
		}
	}
	if len(seen) < 60 {
		t.Errorf("%d flags listed", len(seen))
	}
	for _, want := range []string{"(default 1MiB)", "default 1GiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the help", want)
		}
	}
	if strings.Contains(out, "1073741824") || strings.Contains(out, "1048576") {
		t.Errorf("a size in bytes in the help:\n%s", out)
	}
	// Runtime tuning comes last, apart from the user's settings, and holds
	// the Go runtime's settings only.
	tuning := out[strings.Index(out, "\nRuntime tuning"):]
	var inTuning []string
	for _, e := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(tuning, -1) {
		inTuning = append(inTuning, e[1])
	}
	if got := strings.Join(inTuning, " "); got != "gc-percent memory-limit-ratio idle-gc heap-huge-pages" {
		t.Errorf("runtime tuning, the last topic, lists %q", got)
	}
	cache := out[strings.Index(out, "\nCaching:"):]
	cache = cache[:strings.Index(cache[1:], "\n\n")+1]
	if !strings.Contains(cache, "-cache-bytes") || strings.Contains(cache, "-nats-url") {
		t.Errorf("caching topic:\n%s", cache)
	}
}
