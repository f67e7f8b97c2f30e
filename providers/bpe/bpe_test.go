package bpe_test

import (
	"math"
	"sort"
	"testing"

	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/providers"
	"github.com/convstream/convstream/providers/bpe"
)

// corpusTexts returns the string contents of every message of the
// conformance corpus.
func corpusTexts(t testing.TB) []string {
	t.Helper()
	type conformanceCase struct {
		Input struct {
			Messages []map[string]any `json:"messages"`
		} `json:"input"`
	}
	var out []string
	for _, f := range []string{"reference-suite", "generated-normal", "generated-noise"} {
		cases, err := testcorpus.Decode[conformanceCase]("../../conversation/testdata/conformance/" + f + ".jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			for _, m := range c.Input.Messages {
				if s, ok := m["content"].(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func TestCount(t *testing.T) {
	for _, enc := range bpe.Encodings() {
		c, err := bpe.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.Count("hello world"); n != 2 {
			t.Errorf("%s: hello world = %d tokens, want 2", enc, n)
		}
	}
	if _, err := bpe.New("p50k"); err == nil {
		t.Error("p50k: no error")
	}
}

// TestEstimatorError measures providers.Estimator against each encoding
// over the conformance corpus's message contents (BENCHMARKS.md, "Token
// estimate and budget"), and holds it within 10% over the whole corpus,
// and within 50% for nine messages in ten.
func TestEstimatorError(t *testing.T) {
	texts := corpusTexts(t)
	for _, enc := range bpe.Encodings() {
		exact, err := bpe.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		var sumExact, sumEst int
		var rel []float64
		for _, s := range texts {
			e, x := providers.Estimator{}.Count(s), exact.Count(s)
			sumExact += x
			sumEst += e
			rel = append(rel, math.Abs(float64(e-x))/float64(max(x, 1)))
		}
		sort.Float64s(rel)
		total := float64(sumEst-sumExact) / float64(sumExact)
		p50, p90 := rel[len(rel)/2], rel[len(rel)*9/10]
		t.Logf("estimator against %s over %d texts: total %+.1f%% (%d against %d tokens), per text median %.1f%%, p90 %.1f%%",
			enc, len(texts), 100*total, sumEst, sumExact, 100*p50, 100*p90)
		if math.Abs(total) > 0.10 || p90 > 0.5 {
			t.Errorf("%s: the estimate is off more than documented", enc)
		}
	}
}
