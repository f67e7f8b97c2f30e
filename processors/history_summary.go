package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// HistorySummaryConfig configures HistorySummaryProvider.
type HistorySummaryConfig struct {
	// HistorySummary is the summary of the compressed conversation history.
	HistorySummary string `json:"historySummary"`
	// Format wraps the summary; nil uses DefaultHistorySummaryFormat.
	Format func(summary string) string `json:"-"`
	// Clock stamps a newly created system message; nil means time.Now.
	Clock Clock `json:"-"`
}

// DefaultHistorySummaryFormat wraps a summary in a <chat_history_summary>
// block.
func DefaultHistorySummaryFormat(summary string) string {
	return "<chat_history_summary>\n" +
		"<docstring>Users may have lots of chat messages, here is the summary of the history:</docstring>\n" +
		"<summary>" + summary + "</summary>\n" +
		"</chat_history_summary>"
}

// HistorySummaryProvider appends the conversation summary to the system
// message.
//
// Metadata: historySummary {formattedLength, injected, originalLength}
// (lengths in UTF-16 units, as the reference counts them).
type HistorySummaryProvider struct {
	cfg HistorySummaryConfig
}

// NewHistorySummaryProvider returns a HistorySummaryProvider.
func NewHistorySummaryProvider(cfg HistorySummaryConfig) *HistorySummaryProvider {
	if cfg.Format == nil {
		cfg.Format = DefaultHistorySummaryFormat
	}
	return &HistorySummaryProvider{cfg: cfg}
}

// Name returns "HistorySummaryProvider".
func (*HistorySummaryProvider) Name() string { return NameHistorySummary }

// Process appends the formatted summary, when there is one.
func (p *HistorySummaryProvider) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if p.cfg.HistorySummary == "" {
		return pc, nil
	}
	content := p.cfg.Format(p.cfg.HistorySummary)
	if isBlank(content) {
		return pc, nil
	}
	next := appendSystemContent(pc, NameHistorySummary, content, p.cfg.Clock)
	next.Metadata["historySummary"] = map[string]any{
		"formattedLength": float64(utf16Len(content)),
		"injected":        true,
		"originalLength":  float64(utf16Len(p.cfg.HistorySummary)),
	}
	return next, nil
}

func (d deps) historySummary(raw map[string]any) (enginecore.Processor, error) {
	var cfg HistorySummaryConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Format = d.formatSummary
	cfg.Clock = d.clock
	return NewHistorySummaryProvider(cfg), nil
}
