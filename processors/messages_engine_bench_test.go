package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

// BenchmarkMessagesEnginePipeline runs the messages-engine spec over the
// flat list of conversation-1716, to set next to BenchmarkDefaultPipeline:
// the difference is what the added processors cost.
func BenchmarkMessagesEnginePipeline(b *testing.B) {
	msgs := benchFlatList(b)
	spec := processors.MessagesEngineSpec()
	// The stale trim's size gate would skip this conversation; open it so
	// that the trim's passes are timed.
	if err := spec.Configure(processors.NameStaleToolResultTrim, map[string]any{"minTotalToolChars": 0.0}); err != nil {
		b.Fatal(err)
	}
	e, err := processors.Default().Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	benchEngine(b, e, msgs)
}
