package providers_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
)

// TestBodyEstimateOverCorpus measures BodyTokens with the Estimator
// against both OpenAI encodings, over every body the corpus makes in each
// format, and over the paragraphs of the project's own docs (English
// prose, tables and code, text the synthetic corpus lacks); then the
// budget's worst case: every corpus conversation in each format under
// three budgets counted by the estimate, each body counted exactly. The
// figures are in BENCHMARKS.md, "Token estimate and budget":
//
//	go test ./providers -run TestBodyEstimateOverCorpus -v
//
// It holds a budget to its own counter (a body never counts more than its
// limit by the counter it was fitted with) and the estimate to the bounds
// BENCHMARKS.md states.
func TestBodyEstimateOverCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("counts the corpus's bodies with both encodings")
	}
	outputs := corpus(t)
	formats := []providers.Format{providers.FormatOpenAIChat, providers.FormatOpenAIResponses, providers.FormatAnthropic, providers.FormatGemini}
	var counters []*bpe.Counter
	for _, enc := range bpe.Encodings() {
		c, err := bpe.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		counters = append(counters, c)
	}
	var docs []string
	files, _ := filepath.Glob("../docs/*.md")
	for _, f := range append(files, "../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Split(string(b), "\n\n") {
			if strings.TrimSpace(p) != "" {
				docs = append(docs, p)
			}
		}
	}
	for i, enc := range bpe.Encodings() {
		exact := counters[i]
		var est, ex int
		var rel []float64
		for _, o := range outputs {
			for _, f := range formats {
				r, err := providers.Build(o.messages, f, providers.WithInput(o.input))
				if err != nil {
					t.Fatal(err)
				}
				e, x := providers.BodyTokens(r.Body, nil), providers.BodyTokens(r.Body, exact)
				est, ex = est+e, ex+x
				rel = append(rel, float64(e-x)/float64(max(x, 1)))
			}
		}
		sort.Float64s(rel)
		total := float64(est-ex) / float64(ex)
		t.Logf("bodies against %s: %d bodies, estimate %+.1f%% in all (%d against %d tokens); per body p10 %+.1f%%, median %+.1f%%, p90 %+.1f%%",
			enc, len(rel), 100*total, est, ex, 100*rel[len(rel)/10], 100*rel[len(rel)/2], 100*rel[len(rel)*9/10])
		if math.Abs(total) > 0.10 {
			t.Errorf("%s: the body estimate is off %.1f%%, more than BENCHMARKS.md states", enc, 100*total)
		}
		est, ex = 0, 0
		for _, p := range docs {
			est += providers.Estimator{}.Count(p)
			ex += exact.Count(p)
		}
		total = float64(est-ex) / float64(ex)
		t.Logf("docs paragraphs against %s: %d paragraphs, estimate %+.1f%% (%d against %d tokens)", enc, len(docs), 100*total, est, ex)
		if math.Abs(total) > 0.10 {
			t.Errorf("%s: the estimate of the docs is off %.1f%%", enc, 100*total)
		}
	}

	// The budget's worst case, by what a provider counts.
	for _, b := range []providers.Budget{{MaxTokens: 500, Reserve: 100}, {MaxTokens: 1000, Reserve: 200}, {MaxTokens: 2000}} {
		worst := make([]float64, len(counters))
		var over [2]int
		fitted, refused := 0, 0
		for _, o := range outputs {
			for _, f := range formats {
				r, err := providers.Build(o.messages, f, providers.WithInput(o.input), providers.WithBudget(b))
				if errors.Is(err, providers.ErrOverBudget) {
					refused++
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				fitted++
				limit := b.MaxTokens - b.Reserve
				if n := providers.BodyTokens(r.Body, nil); n > limit || n != r.Usage.Tokens {
					t.Errorf("%s %s: body %d tokens by the estimate, usage %+v", o.name, f, n, r.Usage)
				}
				for i, c := range counters {
					n := providers.BodyTokens(r.Body, c)
					worst[i] = max(worst[i], float64(n)/float64(limit))
					if n > limit {
						over[i]++
					}
				}
				if mt, ok := r.Body["max_tokens"].(int); ok && mt+r.Usage.Tokens > b.MaxTokens {
					t.Errorf("%s: max_tokens %d past the window", o.name, mt)
				}
				// Counted exactly, the budget holds exactly.
				eb := b
				eb.Counter = counters[0]
				if r, err := providers.Build(o.messages, f, providers.WithInput(o.input), providers.WithBudget(eb)); err == nil {
					if n := providers.BodyTokens(r.Body, counters[0]); n > limit {
						t.Errorf("%s %s: %d o200k_base tokens in a budget of %d counted with it", o.name, f, n, limit)
					}
				} else if !errors.Is(err, providers.ErrOverBudget) {
					t.Fatal(err)
				}
			}
		}
		t.Logf("budget maxTokens %d reserve %d (estimate): %d bodies fitted, %d over_budget; worst body/limit o200k_base %.3f (%d over), cl100k_base %.3f (%d over)",
			b.MaxTokens, b.Reserve, fitted, refused, worst[0], over[0], worst[1], over[1])
	}
}
