package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// The errors stream keeps what the worker reports on P.errors.<id>
// (rejections, pipeline failures, dead letters), so that a client that
// was not listening when it was published can read it later
// (Client.Errors, convctl errors). Core NATS subscribers of the subjects
// still receive every report as it is published.

// Defaults of ErrorRetention.
const (
	DefaultErrorsMaxAge             = 7 * 24 * time.Hour
	DefaultErrorsMaxBytes           = 256 << 20
	DefaultErrorsMaxPerConversation = 1000
)

// ErrorRetention bounds the errors stream: records older than MaxAge go,
// each conversation's errors subject keeps its last MaxPerConversation
// records, and past MaxBytes new records are published but not kept, so
// that no conversation's records push out another's (P.errors.@, which gathers
// those of events naming no usable conversation, counts as one). Zero
// values take the defaults; a negative one means no limit.
type ErrorRetention struct {
	MaxAge             time.Duration
	MaxBytes           int64
	MaxPerConversation int64
}

// DefaultErrorRetention returns the default bounds of the errors stream.
func DefaultErrorRetention() ErrorRetention {
	return ErrorRetention{MaxAge: DefaultErrorsMaxAge, MaxBytes: DefaultErrorsMaxBytes, MaxPerConversation: DefaultErrorsMaxPerConversation}
}

// WithErrorRetention sets the bounds of the errors stream (default
// DefaultErrorRetention).
func WithErrorRetention(r ErrorRetention) Option { return func(c *config) { c.errorRetention = r } }

// errorsStreamConfig is the errors stream as r and st (its replicas and
// placement) describe it.
func errorsStreamConfig(s streams.Subjects, st Storage, r ErrorRetention) jetstream.StreamConfig {
	def := DefaultErrorRetention()
	limit := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return -1
		}
		return v
	}
	age := r.MaxAge
	switch {
	case age == 0:
		age = def.MaxAge
	case age < 0:
		age = 0 // no limit
	}
	dup := st.DuplicateWindow
	if dup == 0 {
		dup = DuplicateWindow
	}
	return jetstream.StreamConfig{
		Name:              s.ErrorsStream(),
		Description:       "convstream rejections, pipeline failures and dead letters, by conversation",
		Subjects:          []string{s.AllErrors()},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          max(1, st.StreamReplicas),
		MaxAge:            age,
		MaxBytes:          limit(r.MaxBytes, def.MaxBytes),
		MaxMsgsPerSubject: limit(r.MaxPerConversation, def.MaxPerConversation),
		// A report published twice (a retry, two workers hearing one
		// advisory) carries the same Nats-Msg-Id and is stored once.
		Duplicates: dup,
		// Past MaxBytes a new record is refused (and published only, see
		// reports.store), not room made by dropping the oldest: those are
		// other conversations' (TestNoisyConversationKeepsOthersRecords).
		// MaxMsgsPerSubject still drops a conversation's own oldest.
		Discard:     jetstream.DiscardNew,
		AllowDirect: true,
		Placement:   st.placement(),
	}
}

// provisionErrors makes sure the errors stream exists as cfg describes:
// created when missing. On an existing one whose limits or replicas
// differ it returns an error wrapping ErrSettingsDiffer, unless
// reconcile: then they are brought in line, and a change the server
// refuses is logged, not fatal. Its discard policy is always brought in
// line: records past the byte limit must not push out others.
func provisionErrors(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, reconcile bool, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stream, err := js.Stream(ctx, want.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		_, err = js.CreateStream(ctx, want)
		// A byte limit is storage the server reserves: one the store has
		// no room for is halved until it fits, down to minErrorsBytes,
		// and then halved once more, to leave the other streams and
		// buckets room, rather than keep the worker from starting
		// (TestErrorsStreamFitsSmallStore).
		shrunk := false
		for apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == jsInsufficientResources &&
			want.MaxBytes/2 >= minErrorsBytes; {
			want.MaxBytes /= 2
			shrunk = true
			_, err = js.CreateStream(ctx, want)
		}
		if shrunk && err == nil {
			if want.MaxBytes/2 >= minErrorsBytes {
				want.MaxBytes /= 2
				_, err = js.UpdateStream(ctx, want)
			}
			log.WarnContext(ctx, "errors stream made smaller: the server has no room for its byte limit", "stream", want.Name,
				"max_bytes", want.MaxBytes)
		}
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another worker was first
		}
	case err == nil:
		have := stream.CachedInfo().Config
		next := have
		next.Replicas, next.MaxAge, next.MaxBytes, next.MaxMsgsPerSubject, next.Discard = want.Replicas, want.MaxAge, want.MaxBytes, want.MaxMsgsPerSubject, want.Discard
		var diffs settingDiffs
		diffs.add("replicas", have.Replicas, want.Replicas)
		diffs.add("max age", have.MaxAge, want.MaxAge)
		// A byte limit below the one asked is one the creation shrank to
		// fit the server's store (see above): no reason to refuse.
		shrunk := have.MaxBytes > 0 && want.MaxBytes > 0 && have.MaxBytes < want.MaxBytes
		if !shrunk || reconcile {
			diffs.add("max bytes", have.MaxBytes, want.MaxBytes)
		}
		diffs.add("max records per conversation", have.MaxMsgsPerSubject, want.MaxMsgsPerSubject)
		if len(diffs) > 0 && !reconcile {
			return diffs.err("errors stream " + want.Name)
		}
		if !reconcile {
			next = have // only the discard policy changes
			next.Discard = want.Discard
		}
		if len(diffs) > 0 || next.Discard != have.Discard {
			if _, uErr := js.UpdateStream(ctx, next); uErr != nil {
				log.WarnContext(ctx, "errors stream settings not changed", "stream", want.Name, "err", uErr)
			} else {
				log.InfoContext(ctx, "errors stream settings changed", "stream", want.Name, "replicas", next.Replicas,
					"max_age", next.MaxAge, "max_bytes", next.MaxBytes, "max_per_conversation", next.MaxMsgsPerSubject)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("worker: errors stream %s: %w", want.Name, err)
	}
	return nil
}

// jsInsufficientResources is JetStream's error code for a stream the
// server has no storage for (JSStorageResourcesExceededErr).
const jsInsufficientResources jetstream.ErrorCode = 10047

// minErrorsBytes is the smallest byte limit provisionErrors shrinks the
// errors stream's to when the server has no room for the one asked.
const minErrorsBytes = 1 << 20

// errorsStreamFull reports whether a JetStream API error code says the
// errors stream refused a record for its limits: JSStreamStoreFailed's
// "maximum bytes exceeded" (10077) and "maximum messages exceeded"
// (10076) under DiscardNew.
func errorsStreamFull(code jetstream.ErrorCode) bool { return code == 10077 || code == 10076 }

// reportTimeout bounds the wait for the errors stream to store a report.
const reportTimeout = 5 * time.Second
