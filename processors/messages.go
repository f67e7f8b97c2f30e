package processors

import (
	"context"
	"fmt"

	"github.com/convstream/convstream/enginecore"
)

// checkEvery is how many messages a loop handles between two looks at its
// context: often enough that a deadline stops a long run within
// milliseconds (TestPlaceholderHonoursDeadline), rarely enough to cost
// nothing.
const checkEvery = 64

// mapMessages applies f to every message. f returns the message to keep
// and whether it differs from the input. The input slice is returned
// as-is when nothing changed; otherwise a new slice is built. The second
// result counts the changed messages. It stops with an error wrapping
// ctx.Err() when ctx ends.
func mapMessages(ctx context.Context, msgs []enginecore.Message, f func(m enginecore.Message) (enginecore.Message, bool)) ([]enginecore.Message, int, error) {
	return expandMessages(ctx, msgs, func(m enginecore.Message) (enginecore.Message, bool, error) {
		n, ok := f(m)
		return n, ok, nil
	})
}

// expandMessages is mapMessages for an f that may fail, such as an
// expansion that would exceed the run's limits: the first error stops it.
func expandMessages(ctx context.Context, msgs []enginecore.Message, f func(m enginecore.Message) (enginecore.Message, bool, error)) ([]enginecore.Message, int, error) {
	var out []enginecore.Message
	changed := 0
	for i, m := range msgs {
		if err := interrupted(ctx, i, len(msgs)); err != nil {
			return nil, 0, err
		}
		n, ok, err := f(m)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			if out != nil {
				out[i] = m
			}
			continue
		}
		if out == nil {
			out = make([]enginecore.Message, len(msgs))
			copy(out, msgs[:i])
		}
		out[i] = n
		changed++
	}
	if out == nil {
		return msgs, 0, nil
	}
	return out, changed, nil
}

// interrupted returns, at message i of a loop over n, the error that
// stops the loop when ctx has ended; it looks at ctx every checkEvery
// messages.
func interrupted(ctx context.Context, i, n int) error {
	if i%checkEvery != 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stopped at message %d of %d: %w", i+1, n, err)
	}
	return nil
}

// copyField copies src[key] into dst when src has the key. Fields read
// from a missing key are undefined in JavaScript and vanish from JSON, so
// they are not created here.
func copyField(dst, src map[string]any, key string) {
	if v, ok := src[key]; ok {
		dst[key] = v
	}
}

// orField is JavaScript's `a[key] || b[key]` for building a message: it
// reports false when the result would be undefined.
func orField(a, b map[string]any, key string) (any, bool) {
	if v := a[key]; truthy(v) {
		return v, true
	}
	v, ok := b[key]
	return v, ok
}

// setOr sets dst[key] to `a[key] || b[key]` unless that is undefined.
func setOr(dst, a, b map[string]any, key string) {
	if v, ok := orField(a, b, key); ok {
		dst[key] = v
	}
}

// copyTruthy copies src[key] into dst when it is truthy.
func copyTruthy(dst, src map[string]any, key string) {
	if v := src[key]; truthy(v) {
		dst[key] = v
	}
}

// pick returns a new object with the keys of src among keys.
func pick(src map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		copyField(out, src, k)
	}
	return out
}

// toolSummary returns the call part of a tool entry (without its result).
func toolSummary(tool any) map[string]any {
	return pick(obj(tool), "apiName", "arguments", "id", "identifier", "type")
}

// toolSummaries maps toolSummary over tools.
func toolSummaries(tools []any) []any {
	out := make([]any, len(tools))
	for i, t := range tools {
		out[i] = toolSummary(t)
	}
	return out
}

// cloneFor copies m for an edit that may add up to extra fields, sized so
// that the additions do not grow the copy again.
func cloneFor(m enginecore.Message, extra int) enginecore.Message {
	out := make(enginecore.Message, len(m)+extra)
	for k, v := range m {
		out[k] = v
	}
	return out
}
