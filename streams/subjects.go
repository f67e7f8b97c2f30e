package streams

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultPrefix is the subject prefix used unless told otherwise.
const DefaultPrefix = "convstream"

// UnknownConversation is the subject token used for errors about events
// whose conversation id is missing or unusable. It is not a valid
// conversation id, so that no conversation shares its errors subject
// (TestUnknownConversationReserved).
const UnknownConversation = "@"

// maxConversationID is the longest conversation id, in bytes.
const maxConversationID = 128

// ValidConversationID reports whether id can name a conversation:
// 1 to 128 characters from [A-Za-z0-9_-]. An id becomes a single subject
// token and a KV key, so only characters safe in both. It runs several
// times per event, hence a loop rather than a regular expression.
func ValidConversationID(id string) bool {
	if len(id) == 0 || len(id) > maxConversationID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return false
		}
	}
	return true
}

// idByte reports whether c is in [A-Za-z0-9_-].
func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// prefixPattern keeps a prefix to plain subject tokens (dots separate them).
var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// Subjects names every subject, stream and bucket of one deployment. The
// zero value is not usable; call NewSubjects.
type Subjects struct {
	prefix string
}

// NewSubjects returns the names under prefix ("" means DefaultPrefix).
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !prefixPattern.MatchString(prefix) {
		return Subjects{}, fmt.Errorf("%w: subject prefix %q", ErrInvalidConfig, prefix)
	}
	return Subjects{prefix: prefix}, nil
}

// Prefix returns the subject prefix.
func (s Subjects) Prefix() string { return s.prefix }

// Events returns the subject events of a conversation are published on.
func (s Subjects) Events(conversationID string) string { return s.prefix + ".events." + conversationID }

// AllEvents returns the wildcard subject of the events stream.
func (s Subjects) AllEvents() string { return s.prefix + ".events.>" }

// Chunks returns the subject a conversation's reply chunks
// (TypeMessageChunk) are published on. The events stream holds it too, in
// the conversation's partition, so that chunks keep their order with the
// conversation's events.
func (s Subjects) Chunks(conversationID string) string { return s.prefix + ".chunks." + conversationID }

// AllChunks returns the wildcard subject of the chunks in the events
// stream.
func (s Subjects) AllChunks() string { return s.prefix + ".chunks.>" }

// Replies returns the subject a conversation's reply requests
// (TypeReplyRequested) are published on, in the replies stream.
func (s Subjects) Replies(conversationID string) string {
	return s.prefix + ".replies." + conversationID
}

// AllReplies returns the wildcard subject of the replies stream.
func (s Subjects) AllReplies() string { return s.prefix + ".replies.>" }

// RepliesStream returns the name of the work-queue stream of reply
// requests: CONVSTREAM_REPLIES for the default prefix.
func (s Subjects) RepliesStream() string { return s.StreamName() + "_REPLIES" }

// Stop returns the request-reply subject that stops a conversation's
// streaming reply (TypeReplyStop).
func (s Subjects) Stop(conversationID string) string { return s.prefix + ".stop." + conversationID }

// AllStop returns the wildcard subject orchestrators listen on for stops.
func (s Subjects) AllStop() string { return s.prefix + ".stop.*" }

// Snapshots returns the subject snapshots of a conversation are published on.
func (s Subjects) Snapshots(conversationID string) string {
	return s.prefix + ".snapshots." + conversationID
}

// Errors returns the subject rejections concerning a conversation are
// published on; use UnknownConversation when the id is unusable.
func (s Subjects) Errors(conversationID string) string { return s.prefix + ".errors." + conversationID }

// Inference returns the request-reply subject of a conversation's inference
// requests.
func (s Subjects) Inference(conversationID string) string {
	return s.prefix + ".inference." + conversationID
}

// AllInference returns the wildcard subject the inference service listens on.
func (s Subjects) AllInference() string { return s.prefix + ".inference.*" }

// Doctor returns the subject a conversation's diagnosis is requested on.
func (s Subjects) Doctor(conversationID string) string {
	return s.prefix + ".doctor." + conversationID
}

// AllDoctor returns the wildcard subject the doctor endpoint listens on.
func (s Subjects) AllDoctor() string { return s.prefix + ".doctor.*" }

// Results returns the subject inference results of a conversation are
// published on.
func (s Subjects) Results(conversationID string) string {
	return s.prefix + ".results." + conversationID
}

// EventsStream returns the name of the events stream: CONVSTREAM_EVENTS for
// the default prefix.
func (s Subjects) EventsStream() string { return s.StreamName() + "_EVENTS" }

// SnapshotBucket returns the name of the snapshot key-value bucket:
// CONVSTREAM_SNAPSHOTS for the default prefix.
func (s Subjects) SnapshotBucket() string { return s.StreamName() + "_SNAPSHOTS" }

// SnapshotKey returns the subject under which the snapshot bucket stores a
// conversation's snapshot ($KV.CONVSTREAM_SNAPSHOTS.<id>). Every write of
// the snapshot is published there, so a core subscription to it follows
// the stored snapshots without a consumer (client.Watch).
func (s Subjects) SnapshotKey(conversationID string) string {
	return "$KV." + s.SnapshotBucket() + "." + conversationID
}

// AllSnapshotKeys returns the wildcard subject of the snapshot bucket's
// keys.
func (s Subjects) AllSnapshotKeys() string { return "$KV." + s.SnapshotBucket() + ".>" }

// KVOperationHeader is the header with which a key-value bucket marks a
// delete ("DEL") or a purge ("PURGE") of a key; a write carries none.
const KVOperationHeader = "KV-Operation"

func (s Subjects) StreamName() string {
	return strings.ToUpper(strings.ReplaceAll(s.prefix, ".", "_"))
}

// ConversationOf returns the conversation id named by subject, which must be
// kind's subject (events, inference) of a valid conversation id; ok is false
// otherwise.
func (s Subjects) ConversationOf(kind, subject string) (id string, ok bool) {
	rest, found := strings.CutPrefix(subject, s.prefix+"."+kind+".")
	if !found || !ValidConversationID(rest) {
		return "", false
	}
	return rest, true
}

// CheckpointBucket returns the name of the checkpoint bucket:
// CONVSTREAM_CHECKPOINTS for the default prefix.
func (s Subjects) CheckpointBucket() string { return s.StreamName() + "_CHECKPOINTS" }

// MembersBucket returns the name of the bucket of live workers on a
// partitioned stream: CONVSTREAM_WORKERS for the default prefix.
func (s Subjects) MembersBucket() string { return s.StreamName() + "_WORKERS" }

// AllErrors returns the wildcard subject of the errors stream.
func (s Subjects) AllErrors() string { return s.prefix + ".errors.>" }

// ErrorsStream returns the name of the errors stream: CONVSTREAM_ERRORS for
// the default prefix.
func (s Subjects) ErrorsStream() string { return s.StreamName() + "_ERRORS" }

// MaxDeliveriesAdvisory is where JetStream announces the events a consumer
// of stream gave up on.
func MaxDeliveriesAdvisory(stream string) string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + stream + ".*"
}
