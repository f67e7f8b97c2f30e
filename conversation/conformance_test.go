package conversation

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/jsondiff"
	"github.com/convstream/convstream/internal/testcorpus"
)

// conformanceCase is one line of the conformance files: an input and the
// reference's output for it.
type conformanceCase struct {
	Name           string          `json:"name"`
	Input          json.RawMessage `json:"input"`
	Expected       json.RawMessage `json:"expected"`
	ReferenceError string          `json:"referenceError"`
}

func readCases(t testing.TB, path string) []conformanceCase {
	t.Helper()
	cases, err := testcorpus.Decode[conformanceCase](path)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// runParseJSON parses a conformance input and returns the result as a
// decoded JSON value.
func runParseJSON(input []byte) (any, *Result, error) {
	msgs, groups, err := DecodeInputBytes(input)
	if err != nil {
		return nil, nil, err
	}
	res, err := Parse(msgs, groups)
	if err != nil {
		return nil, nil, err
	}
	enc, err := json.Marshal(res)
	if err != nil {
		return nil, nil, err
	}
	var got any
	if err := json.Unmarshal(enc, &got); err != nil {
		return nil, nil, err
	}
	return got, res, nil
}

// TestConformance runs every case computed by the reference implementation
// and requires our output to equal it.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/conformance/*.jsonl.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	sort.Strings(files)
	passed, total := 0, 0
	var failures []string
	for _, file := range files {
		base := strings.TrimSuffix(filepath.Base(file), ".jsonl.gz")
		filePassed, fileTotal := 0, 0
		for _, c := range readCases(t, file) {
			total++
			fileTotal++
			got, res, err := runParseJSON(c.Input)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %s: error: %v", base, c.Name, err))
				continue
			}
			if c.Expected == nil {
				// The reference throws on these; we must return a result that
				// still holds every input message.
				var in struct {
					Messages []struct {
						ID string `json:"id"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(c.Input, &in); err != nil {
					t.Fatal(err)
				}
				missing := 0
				for _, m := range in.Messages {
					if _, ok := res.MessageMap.Get(m.ID); !ok {
						missing++
					}
				}
				if missing > 0 {
					failures = append(failures, fmt.Sprintf("%s: %s: %d input ids missing from messageMap", base, c.Name, missing))
					continue
				}
				passed++
				filePassed++
				continue
			}
			var want any
			if err := json.Unmarshal(c.Expected, &want); err != nil {
				t.Fatal(err)
			}
			if d := jsondiff.Diff(want, got); d != "" {
				failures = append(failures, fmt.Sprintf("%s: %s: %s", base, c.Name, d))
				continue
			}
			passed++
			filePassed++
		}
		t.Logf("%s: %d/%d", base, filePassed, fileTotal)
	}
	for i, f := range failures {
		if i == 40 {
			t.Errorf("... and %d more", len(failures)-40)
			break
		}
		t.Error(f)
	}
	// Printed (not logged) so that the summary shows without -v.
	fmt.Printf("conformance: %d/%d passed\n", passed, total)
}
