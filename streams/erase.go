package streams

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Erasing a conversation removes everything stored of it, everywhere: a
// client sends an EraseRequest to Erase(conversationID) and a worker
// answers with an EraseResponse once the conversation's events and reply
// chunks, its snapshot and checkpoint with their history, its error
// records and dead letters and its waiting reply requests are gone from
// every replica and from the servers' disks, and the workers hold it no
// longer. The worker publishes the EraseReceipt on
// Receipts(conversationID), in the receipts stream, where it is kept.
// Events published to the conversation after the answer start a new
// conversation under the same id. docs/events.md, "Erasing a
// conversation", gives the details.

// DefaultEraseTimeout bounds one erasure on the worker's side, unless
// its WithEraseTimeout says otherwise: the server rewrites a message's
// block file for each secure delete, and BenchmarkErase erases 260 to 310
// stored messages a second on one server of a 2-core machine, so about
// 30,000 in 2 minutes. Requesters wait a little longer for the answer.
const DefaultEraseTimeout = 2 * time.Minute

// Erase returns the request-reply subject that erases a conversation.
func (s Subjects) Erase(conversationID string) string { return s.prefix + ".erase." + conversationID }

// AllErase returns the wildcard subject the workers answer erasures on.
func (s Subjects) AllErase() string { return s.prefix + ".erase.*" }

// Forget returns the subject on which the worker erasing a conversation
// tells every worker to drop what it holds of it; each answers once it
// has. Only workers use it.
func (s Subjects) Forget(conversationID string) string { return s.prefix + ".forget." + conversationID }

// AllForget returns the wildcard subject every worker listens on for
// Forget.
func (s Subjects) AllForget() string { return s.prefix + ".forget.*" }

// Receipts returns the subject the receipts of a conversation's erasures
// are published on, in the receipts stream.
func (s Subjects) Receipts(conversationID string) string {
	return s.prefix + ".receipts." + conversationID
}

// AllReceipts returns the wildcard subject of the receipts stream.
func (s Subjects) AllReceipts() string { return s.prefix + ".receipts.>" }

// ReceiptsStream returns the name of the stream that keeps the erasure
// receipts: CONVSTREAM_RECEIPTS for the default prefix.
func (s Subjects) ReceiptsStream() string { return s.StreamName() + "_RECEIPTS" }

// ReceiptsStreamConfig is the receipts stream: every receipt kept, with
// no limit, since a receipt is what proves an erasure was done. A receipt
// holds counts, names and times, never content.
func ReceiptsStreamConfig(s Subjects) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        s.ReceiptsStream(),
		Description: "convstream: receipts of erased conversations (no content)",
		Subjects:    []string{s.AllReceipts()},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
	}
}

// EraseRequest is the JSON body of a request on Erase(conversationID).
// An empty body is a request with no fields.
type EraseRequest struct {
	// By names who asks (a user, an operator, a ticket), for the receipt.
	// NATS does not tell the worker who sent a request: permissions say
	// who may (see WithErase), and By says who did.
	By string `json:"by,omitempty"`
}

// EraseResponse is the JSON answer to an EraseRequest: the receipt, or
// the error that stopped the erasure. An erasure that failed part way may
// be asked for again: it erases what is left.
type EraseResponse struct {
	Receipt *EraseReceipt `json:"receipt,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// ReceiptFormat is the version of an EraseReceipt's form, in its
// "format" field. Readers take every format up to theirs.
const ReceiptFormat = 1

// EraseReceipt records an erasure: what was erased, when and at whose
// request. It holds no content of the conversation.
type EraseReceipt struct {
	// Format is ReceiptFormat as the worker that wrote it knew it.
	Format       int    `json:"format"`
	Conversation string `json:"conversation"`
	// ErasedAt is when the erasure ended.
	ErasedAt time.Time `json:"erasedAt"`
	// By is the request's By.
	By string `json:"by,omitempty"`
	// Worker is the id of the worker that erased it.
	Worker string `json:"worker"`
	// Erased counts the stored messages erased, by store.
	Erased ErasedCounts `json:"erased"`
	// PurgedOnly names the streams whose messages of the conversation
	// were purged but could not be overwritten, since the stream denies
	// deletes (a bucket an earlier release made): their bytes stay in
	// the servers' block files until the server compacts those blocks.
	// docs/operations.md says how to recreate such a bucket.
	PurgedOnly []string `json:"purgedOnly,omitempty"`
}

// ErasedCounts counts the stored messages an erasure removed, by store.
// A key-value entry counts once per revision kept in its history.
type ErasedCounts struct {
	Events      int `json:"events"`      // the events stream's events
	Chunks      int `json:"chunks"`      // the events stream's reply chunks
	Snapshots   int `json:"snapshots"`   // the snapshot bucket's revisions
	Checkpoints int `json:"checkpoints"` // the checkpoint bucket's revisions
	Errors      int `json:"errors"`      // error records and dead letters
	Replies     int `json:"replies"`     // reply requests not yet taken
	// Workers is how many workers answered that they dropped the
	// conversation from memory.
	Workers int `json:"workers"`
}
