package natstest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/testcorpus"
)

// CorpusCase is a conversation of the conformance corpus, with its
// messages and groups decoded.
type CorpusCase struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Expected json.RawMessage `json:"expected"`

	Msgs   []*conversation.Message      `json:"-"`
	Groups []*conversation.MessageGroup `json:"-"`
}

// conformanceDir is conversation/testdata/conformance, found from this
// file so that any package's tests read the same corpus.
func conformanceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "conversation", "testdata", "conformance")
}

// LoadCorpus returns up to n conversations of a conformance file that a
// live Conversation accepts message by message (no repeated ids, no
// cycles), so that appending them one event at a time is meaningful.
func LoadCorpus(t testing.TB, file string, n int) []CorpusCase {
	t.Helper()
	cases, err := testcorpus.Decode[CorpusCase](filepath.Join(conformanceDir(), file))
	if err != nil {
		t.Fatal(err)
	}
	var out []CorpusCase
	for _, c := range cases {
		if len(out) == n {
			break
		}
		if len(c.Expected) == 0 {
			continue
		}
		msgs, groups, err := conversation.DecodeInputBytes(c.Input)
		if err != nil || len(msgs) == 0 {
			continue
		}
		live := conversation.NewConversation()
		ok := true
		for _, m := range msgs {
			if live.Append(m) != nil {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		c.Msgs, c.Groups = msgs, groups
		out = append(out, c)
	}
	return out
}

// CaseID is the conversation id of the i-th case of a test.
func CaseID(i int) string {
	return fmt.Sprintf("c%03d", i)
}
