package worker

import (
	"fmt"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// Default limits.
const (
	// DefaultMaxEventBytes bounds an event: payload plus headers.
	DefaultMaxEventBytes = 1 << 20
	// DefaultMaxMessages bounds the messages of one conversation.
	DefaultMaxMessages = 10_000
	// DefaultMaxBranchDepth bounds how deeply branch points may nest in a
	// conversation's context tree: that of conversation.Parse, which keeps
	// the tree's JSON within what common decoders accept.
	DefaultMaxBranchDepth = conversation.DefaultMaxBranchDepth
)

// Limits bounds what the worker accepts. An event over a limit is rejected;
// it never stops the worker.
type Limits struct {
	// MaxEventBytes is the largest event accepted, headers and payload
	// together.
	MaxEventBytes int
	// MaxMessages is the most messages a conversation may hold.
	MaxMessages int
	// MaxSnapshotBytes is the largest snapshot the worker will publish and
	// store; 0 means what can be stored: the NATS server's max payload (and
	// the snapshot bucket's maximum message size, when it has one) less
	// the write's subject and headers. An event whose snapshot would be
	// larger, or than what can be stored in any case, is rejected
	// (CodeSnapshotTooLarge) before it takes effect.
	MaxSnapshotBytes int
	// MaxBranchDepth is the most branch points that may nest in a
	// conversation's context tree (a branch inside a branch inside ...).
	// An event that would nest them deeper is rejected (CodeTooDeep). 0
	// means DefaultMaxBranchDepth.
	MaxBranchDepth int
}

// DefaultLimits returns the limits used unless told otherwise.
func DefaultLimits() Limits {
	return Limits{MaxEventBytes: DefaultMaxEventBytes, MaxMessages: DefaultMaxMessages, MaxBranchDepth: DefaultMaxBranchDepth}
}

// maxLimit bounds every limit: the worker keeps sizes in 32 bits
// (convState), and no NATS server accepts a message of a GiB.
const maxLimit = 1 << 30

func (l Limits) validate() error {
	if l.MaxEventBytes <= 0 || l.MaxMessages <= 0 || l.MaxSnapshotBytes < 0 || l.MaxBranchDepth < 0 {
		return fmt.Errorf("%w: limits must be positive: %+v", streams.ErrInvalidConfig, l)
	}
	if l.MaxSnapshotBytes > maxLimit || l.MaxBranchDepth > maxLimit {
		return fmt.Errorf("%w: limits must be at most %d: %+v", streams.ErrInvalidConfig, maxLimit, l)
	}
	return nil
}

// branchDepth is the nesting limit given to conversations: MaxBranchDepth,
// or the default when it is 0 (a Limits literal written before the field
// existed).
func (l Limits) branchDepth() int {
	if l.MaxBranchDepth == 0 {
		return DefaultMaxBranchDepth
	}
	return l.MaxBranchDepth
}

// conversationOptions are the options of every conversation the worker
// builds, so that a rebuild refuses what apply refuses.
func (l Limits) conversationOptions() []conversation.Option {
	return []conversation.Option{conversation.WithMaxMessages(l.MaxMessages), conversation.WithMaxBranchDepth(l.branchDepth())}
}
