package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestCompressedGroupRoleTransform(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"c1","role":"compressedGroup","content":"Earlier: we chose Go.","compressedMessages":[{"id":"x"}]},
		{"id":"c2","role":"compressedGroup","content":""},
		{"id":"u","role":"user","content":"next"}
	]`)
	out := process(t, build(t, processors.NameCompressedGroupRoleTransform, nil), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"c1","role":"user","content":"<compressed_history_summary>\nEarlier: we chose Go.\n</compressed_history_summary>","compressedMessages":[{"id":"x"}]},
		{"id":"c2","role":"user","content":""},
		{"id":"u","role":"user","content":"next"}]`)
	assertJSON(t, out.Metadata, `{"compressedGroupRoleTransformProcessed":2}`)
}
