package enginecore_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/convstream/convstream/enginecore"
)

// upper is a processor that upper-cases string content, copying each
// message it changes.
func upper() enginecore.Processor {
	return enginecore.NewFunc("upper", func(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
		next := pc.Derive()
		next.Messages = make([]enginecore.Message, len(pc.Messages))
		for i, m := range pc.Messages {
			if s, ok := m["content"].(string); ok {
				m = maps.Clone(m)
				m["content"] = strings.ToUpper(s)
			}
			next.Messages[i] = m
		}
		next.Metadata["upper"] = len(next.Messages)
		return next, nil
	})
}

func ExampleEngine_Process() {
	engine := enginecore.New(enginecore.WithProcessors(upper()))
	res, err := engine.Process(context.Background(), []enginecore.Message{
		{"role": "user", "content": "hello"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Messages[0]["content"], res.Metadata["upper"], res.Stats.ProcessedCount)
	// Output: HELLO 1 1
}

// spanObserver stands in for a tracing integration: one span per processor.
type spanObserver struct{}

func (spanObserver) ProcessorStarted(ctx context.Context, name string) context.Context {
	fmt.Println("start", name)
	return ctx
}

func (spanObserver) ProcessorFinished(_ context.Context, name string, _ time.Duration, err error) {
	fmt.Println("end", name, err)
}

func ExampleWithObserver() {
	engine := enginecore.New(enginecore.WithObserver(spanObserver{}), enginecore.WithProcessors(upper()))
	_, _ = engine.Process(context.Background(), nil)
	// Output:
	// start upper
	// end upper <nil>
}
