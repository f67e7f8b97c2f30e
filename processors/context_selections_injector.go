package processors

import (
	"context"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// ContextSelectionsInjectorConfig configures ContextSelectionsInjector.
type ContextSelectionsInjectorConfig struct {
	// Enabled turns the injector on.
	Enabled bool `json:"enabled"`
}

// ContextSelectionsInjector adds to every user message the selections
// the user attached to it (metadata.contextSelections: text, code or page
// excerpts with their source), as a <user_context_selections> block in
// the message's SYSTEM CONTEXT section.
//
// Metadata: ContextSelectionsInjectorInjectedCount, when any message got
// selections.
type ContextSelectionsInjector struct {
	cfg ContextSelectionsInjectorConfig
}

// NewContextSelectionsInjector returns a ContextSelectionsInjector processor.
func NewContextSelectionsInjector(cfg ContextSelectionsInjectorConfig) *ContextSelectionsInjector {
	return &ContextSelectionsInjector{cfg: cfg}
}

// Name returns "ContextSelectionsInjector".
func (*ContextSelectionsInjector) Name() string { return NameContextSelectionsInjector }

// Process injects the selections.
func (p *ContextSelectionsInjector) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.cfg.Enabled {
		return pc, nil
	}
	msgs, n, err := mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "user" {
			return m, false
		}
		selections := arr(dig(m, "metadata", "contextSelections"))
		if len(selections) == 0 {
			return m, false
		}
		// Counted even when the content has no shape to append to, as the
		// reference counts it.
		return appendSystemContext(m, formatContextSelections(selections), "user_context_selections"), true
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return pc, nil
	}
	next := pc.Derive()
	next.Messages = msgs
	next.Metadata["ContextSelectionsInjectorInjectedCount"] = float64(n)
	return next, nil
}

// formatContextSelections renders the selections of one message.
func formatContextSelections(selections []any) string {
	var b strings.Builder
	b.WriteString(`<user_context_selections count="` + itoa(len(selections)) + "\">\n")
	for i, s := range selections {
		sel := obj(s)
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("<context_selection " + selectionAttributes(sel) + ">\n" + selectionBody(sel) + "\n</context_selection>")
	}
	b.WriteString("\n</user_context_selections>")
	return b.String()
}

// selectionAttributes lists where a selection comes from.
func selectionAttributes(sel map[string]any) string {
	source := templateString(sel, "source")
	attrs := []string{`source="` + source + `"`}
	attr := func(name, key string, escape bool) {
		v := sel[key]
		if !truthy(v) {
			return
		}
		s := jsString(v)
		if escape {
			s = escapeXMLAttr(s)
		}
		attrs = append(attrs, name+`="`+s+`"`)
	}
	attr("title", "title", true)
	switch source {
	case "page":
		attrs = append(attrs, `pageId="`+escapeXMLAttr(str(sel["pageId"]))+`"`)
	case "code":
		attrs = append(attrs, `filePath="`+escapeXMLAttr(str(sel["filePath"]))+`"`)
		attr("language", "language", true)
		attr("side", "side", false)
		attr("workingDirectory", "workingDirectory", true)
	}
	out := strings.Join(attrs, " ")
	if r := obj(sel["lineRange"]); truthy(sel["lineRange"]) {
		end := "endLine"
		if r["endLine"] == nil {
			end = "startLine"
		}
		out += ` lines="` + templateString(r, "startLine") + "-" + templateString(r, end) + `"`
	}
	return out
}

// selectionBody is a page selection's XML when it has one, else the
// selected text.
func selectionBody(sel map[string]any) string {
	if sel["source"] == "page" && truthy(sel["xml"]) {
		return jsString(sel["xml"])
	}
	return templateString(sel, "content")
}

func (d deps) contextSelectionsInjector(raw map[string]any) (enginecore.Processor, error) {
	var cfg ContextSelectionsInjectorConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewContextSelectionsInjector(cfg), nil
}
