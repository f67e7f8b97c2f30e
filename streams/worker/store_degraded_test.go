package worker

import (
	"testing"
	"time"

	"github.com/convstream/convstream/streams"
)

// TestDegradedSet: a refused store makes the conversation's events up to
// the last applied measured, a second refusal of events measured already
// says so (they are then terminated, not applied a third time), a store
// past them ends the measuring, and a conversation is listed until
// DegradedFor after its last refusal.
func TestDegradedSet(t *testing.T) {
	var s degradedSet
	re := streams.Reject(streams.CodeSnapshotTooLarge, "over")
	if s.strict("a", 1) || s.count() != 0 {
		t.Fatal("an empty set measures or counts")
	}
	s.mark("a", 5, re)
	if s.strict("a", 5) || s.count() != 1 {
		t.Errorf("a rejection at apply time: strict %v, count %d; want not strict, 1", s.strict("a", 5), s.count())
	}
	if again := s.refused("b", 10, 12, re); again {
		t.Error("a first refusal says again")
	}
	if !s.strict("b", 12) || s.strict("b", 13) || s.strict("a", 1) {
		t.Error("strict: want b up to 12 only")
	}
	if again := s.refused("b", 13, 14, re); again {
		t.Error("a refusal of events not all measured says again")
	}
	if again := s.refused("b", 14, 14, re); !again {
		t.Error("a refusal of measured events does not say again")
	}
	s.stored("b", 13)
	if !s.strict("b", 14) {
		t.Error("a store short of the measured events ended the measuring")
	}
	s.stored("b", 14)
	if s.strict("b", 14) || s.strictN.Load() != 0 {
		t.Error("a store past the measured events did not end the measuring")
	}
	if got := s.list(); len(got) != 2 || got[0].ConversationID != "b" {
		t.Errorf("list: %+v", got)
	}
	s.mu.Lock()
	s.byID["a"].Last = time.Now().Add(-DegradedFor - time.Second)
	s.mu.Unlock()
	if got := s.list(); len(got) != 1 || got[0].ConversationID != "b" || s.count() != 1 {
		t.Errorf("after DegradedFor: %+v", got)
	}
}
