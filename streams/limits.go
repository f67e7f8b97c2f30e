package streams

import "fmt"

// Default limits.
const (
	// DefaultMaxEventBytes bounds an event: payload plus headers.
	DefaultMaxEventBytes = 1 << 20
	// DefaultMaxMessages bounds the messages of one conversation.
	DefaultMaxMessages = 10_000
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
	// store; 0 means the NATS server's max payload. An event whose snapshot
	// would be larger is rejected.
	MaxSnapshotBytes int
}

// DefaultLimits returns the limits used unless told otherwise.
func DefaultLimits() Limits {
	return Limits{MaxEventBytes: DefaultMaxEventBytes, MaxMessages: DefaultMaxMessages}
}

func (l Limits) validate() error {
	if l.MaxEventBytes <= 0 || l.MaxMessages <= 0 || l.MaxSnapshotBytes < 0 {
		return fmt.Errorf("%w: limits must be positive: %+v", ErrInvalidConfig, l)
	}
	return nil
}
