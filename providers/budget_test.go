package providers

import (
	"encoding/json"
	"errors"
	"testing"
)

// words counts one token a word, so that the tests can reckon.
type words struct{}

func (words) Count(s string) int {
	n, in := 0, false
	for _, r := range s {
		if r == ' ' {
			in = false
		} else if !in {
			in, n = true, n+1
		}
	}
	return n
}

func TestBudgetDropsOldestTurnsWhole(t *testing.T) {
	in := msgs(t, `[{"role":"system","content":"be brief"},
		{"role":"user","content":"one two three four five six seven eight nine ten"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"f","arguments":""}}]},
		{"role":"tool","tool_call_id":"c1","content":"a b c d e f g h i j k l"},
		{"role":"assistant","content":"done"},
		{"role":"user","content":"second question"},
		{"role":"assistant","content":"second answer"},
		{"role":"user","content":"third"}]`)
	// Costs with words and 4 a message: system 6, first turn 14+8+5+16+5=48,
	// second 6+6=12, third 5; 23 without the first turn.
	r, err := Build(in, FormatOpenAIChat, WithBudget(Budget{MaxTokens: 40, Reserve: 10, KeepTurns: 1, Counter: words{}}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r.Messages)
	want := `[{"content":"be brief","role":"system"},{"content":"second question","role":"user"},{"content":"second answer","role":"assistant"},{"content":"third","role":"user"}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if r.Usage == nil || r.Usage.Tokens != 23 || r.Usage.Limit != 30 || r.Usage.DroppedMessages != 4 {
		t.Errorf("usage %+v", r.Usage)
	}

	// Two kept turns do not fit: an error, not a split.
	_, err = Build(in, FormatAnthropic, WithBudget(Budget{MaxTokens: 20, Reserve: 5, KeepTurns: 2, Counter: words{}}))
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("err %v, want ErrOverBudget", err)
	}

	// Everything fits: nothing dropped.
	r, err = Build(in, FormatGemini, WithBudget(Budget{MaxTokens: 1000, KeepTurns: 1}))
	if err != nil || r.Usage.DroppedMessages != 0 {
		t.Fatalf("%+v %v", r.Usage, err)
	}
}

func TestBudgetCheck(t *testing.T) {
	for _, b := range []Budget{{}, {MaxTokens: 10, Reserve: 10}, {MaxTokens: 10, Reserve: -1}, {MaxTokens: 10, KeepTurns: -1}} {
		if _, err := Build(nil, FormatOpenAIChat, WithBudget(b)); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
}
