package loadgen

import (
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
)

// payloads are the encoded events of a run, built before it starts so
// that encoding does not compete with what is measured.
type payloads struct {
	headers []nats.Header
	data    [][]byte
}

// buildPayloads encodes cfg.Events message.appended events in structured
// mode: event i appends message k = i / conversations to conversation
// conversationID(i mod conversations), its parent being message k-1.
func buildPayloads(cfg Config, conversationID func(conv int) string) (*payloads, error) {
	p := &payloads{headers: make([]nats.Header, cfg.Events), data: make([][]byte, cfg.Events)}
	content := strings.Repeat("lorem ipsum dolor sit amet ", cfg.ContentBytes/27+1)[:cfg.ContentBytes]
	for i := range cfg.Events {
		conv, k := i%cfg.Conversations, i/cfg.Conversations
		id := conversationID(conv)
		msg := map[string]any{"id": fmt.Sprintf("m%d", k), "role": []string{"user", "assistant"}[k%2],
			"content": content, "createdAt": 1704067200000 + k, "parentId": nil}
		if k > 0 {
			msg["parentId"] = fmt.Sprintf("m%d", k-1)
		}
		ev := event.New()
		ev.SetID(fmt.Sprintf("%s-%d", id, k))
		ev.SetSource("urn:convstream:loadgen")
		ev.SetType(streams.TypeMessageAppended)
		ev.SetExtension(streams.ExtConversationID, id)
		if err := ev.SetData(streams.ContentTypeJSON, msg); err != nil {
			return nil, err
		}
		m, err := streams.EncodeEvent("loadgen", &ev, streams.Structured)
		if err != nil {
			return nil, err
		}
		p.headers[i], p.data[i] = m.Header, m.Data
	}
	return p, nil
}
