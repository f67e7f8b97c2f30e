package processors_test

import (
	"context"
	"fmt"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

func ExampleRegistry_Build() {
	spec, err := processors.ParseSpec([]byte(`
name: minimal
processors:
  - name: SystemRoleInjector
    config:
      systemRole: You are a terse assistant.
  - name: PlaceholderVariablesProcessor
    config:
      variableGenerators: {user: Ann}
  - MessageCleanupProcessor
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	engine, err := processors.Default().Build(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := engine.Process(context.Background(), []enginecore.Message{
		{"id": "m1", "role": "user", "content": "Hi, I am {{user}}.", "createdAt": 1.0},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range res.Messages {
		fmt.Printf("%s: %s\n", m["role"], m["content"])
	}
	// Output:
	// system: You are a terse assistant.
	// user: Hi, I am Ann.
}

func ExampleRegistry_Build_errors() {
	spec, _ := processors.ParseSpec([]byte(`{"processors": [
		{"name": "HistoryTruncateProcessor", "config": {"historyCount": "ten"}},
		{"name": "NoSuchProcessor"}]}`))
	_, err := processors.Default().Build(spec)
	fmt.Println(err)
	// Output:
	// processors[0].config.historyCount: must be an integer, got string
	// processors[1].name: unknown processor "NoSuchProcessor"
}
