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

// PartitionChunks returns the filter subject of one partition's chunks:
// P.chunks.<partition>.*.
func (s Subjects) PartitionChunks(partition int) string {
	return s.prefix + ".chunks." + strconv.Itoa(partition) + ".*"
}

// PartitionTransform is the events stream's subject transform for n
// partitions: P.events.<id> is stored as P.events.<partition>.<id>, and
// P.chunks.<id> as P.chunks.<partition>.<id>, the same partition.
func (s Subjects) PartitionTransform(n int) *jetstream.SubjectTransformConfig {
	if n < 1 {
		return nil
	}
	return &jetstream.SubjectTransformConfig{
		Source:      s.prefix + ".*.*",
		Destination: s.prefix + ".{{wildcard(1)}}.{{partition(" + strconv.Itoa(n) + ",2)}}.{{wildcard(2)}}",
	}
}

// LegacyPartitionTransform is the transform of a partitioned events stream
// made before chunks: it covers the events subjects only. Provision
// replaces it with PartitionTransform, which stores events under the same
// subjects.
func (s Subjects) LegacyPartitionTransform(n int) *jetstream.SubjectTransformConfig {
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

// StoredChunks returns the subject the chunks of a conversation are stored
// under, with n partitions (0: unpartitioned).
func (s Subjects) StoredChunks(conversationID string, n int) string {
	if n < 1 {
		return s.Chunks(conversationID)
	}
	return s.prefix + ".chunks." + strconv.Itoa(PartitionOf(conversationID, n)) + "." + conversationID
}

// StoredConversation returns the filter subject of everything the events
// stream holds of a conversation, its events and its chunks, with n
// partitions (0: unpartitioned): P.*.<id> or P.*.<partition>.<id>.
func (s Subjects) StoredConversation(conversationID string, n int) string {
	if n < 1 {
		return s.prefix + ".*." + conversationID
	}
	return s.prefix + ".*." + strconv.Itoa(PartitionOf(conversationID, n)) + "." + conversationID
}

// StoredConversationOf returns the conversation of a stored event or chunk
// subject. With n partitions the subject must be P.events.<partition>.<id>
// (or P.chunks.…) with the partition the id maps to; anything else (a
// publisher that wrote a wrong partition token by hand) is not a usable
// subject.
func (s Subjects) StoredConversationOf(subject string, n int) (string, bool) {
	id, _, ok := s.StoredKindOf(subject, n)
	return id, ok
}

// StoredKindOf is StoredConversationOf that also says whether the subject
// is a chunks subject.
func (s Subjects) StoredKindOf(subject string, n int) (id string, chunk bool, ok bool) {
	rest, found := strings.CutPrefix(subject, s.prefix+".")
	if !found {
		return "", false, false
	}
	kind, rest, _ := strings.Cut(rest, ".")
	switch kind {
	case "events":
	case "chunks":
		chunk = true
	default:
		return "", false, false
	}
	if n < 1 {
		if !ValidConversationID(rest) {
			return "", false, false
		}
		return rest, chunk, true
	}
	part, id, found := strings.Cut(rest, ".")
	if !found || !ValidConversationID(id) || part != strconv.Itoa(PartitionOf(id, n)) {
		return "", false, false
	}
	return id, chunk, true
}
