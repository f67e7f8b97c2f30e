package streams

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// PartitionOf returns the partition of a conversation among n: the
// FNV-1a hash of its id modulo n, which is what the server's subject
// mapping function {{partition(n,1)}} computes for the id token. It returns
// 0 when n < 1.
func PartitionOf(conversationID string, n int) int {
	if n < 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(conversationID))
	return int(h.Sum32() % uint32(n))
}

// PartitionedEvents returns the subject the events stream stores an event
// of a conversation under when the stream has n partitions:
// P.events.<partition>.<conversationId>. Publishers keep publishing on
// Events(conversationID); the stream's subject transform adds the token.
func (s Subjects) PartitionedEvents(conversationID string, n int) string {
	return s.prefix + ".events." + strconv.Itoa(PartitionOf(conversationID, n)) + "." + conversationID
}

// PartitionEvents returns the filter subject of one partition's events:
// P.events.<partition>.*.
func (s Subjects) PartitionEvents(partition int) string {
	return s.prefix + ".events." + strconv.Itoa(partition) + ".*"
}

// PartitionTransform is the events stream's subject transform for n
// partitions: P.events.<id> is stored as P.events.<partition>.<id>.
func (s Subjects) PartitionTransform(n int) *jetstream.SubjectTransformConfig {
	if n < 1 {
		return nil
	}
	return &jetstream.SubjectTransformConfig{
		Source:      s.prefix + ".events.*",
		Destination: s.prefix + ".events.{{partition(" + strconv.Itoa(n) + ",1)}}.{{wildcard(1)}}",
	}
}

// StoredEvents returns the subject the events of a conversation are
// stored under, with n partitions (0: unpartitioned).
func (s Subjects) StoredEvents(conversationID string, n int) string {
	if n < 1 {
		return s.Events(conversationID)
	}
	return s.PartitionedEvents(conversationID, n)
}

// StoredConversationOf returns the conversation of a stored event subject.
// With n partitions the subject must be P.events.<partition>.<id> with the
// partition the id maps to; anything else (a publisher that wrote a wrong
// partition token by hand) is not a usable subject.
func (s Subjects) StoredConversationOf(subject string, n int) (string, bool) {
	if n < 1 {
		return s.ConversationOf("events", subject)
	}
	rest, found := strings.CutPrefix(subject, s.prefix+".events.")
	if !found {
		return "", false
	}
	part, id, found := strings.Cut(rest, ".")
	if !found || !ValidConversationID(id) || part != strconv.Itoa(PartitionOf(id, n)) {
		return "", false
	}
	return id, true
}
