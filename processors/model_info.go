package processors

import (
	"context"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// ModelInfoConfig configures ModelInfoProvider.
type ModelInfoConfig struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// DisplayName is the model's human name, e.g. "Fable 5".
	DisplayName string `json:"displayName"`
	// KnowledgeCutoff is the model's training cutoff, e.g. "2024-06".
	KnowledgeCutoff string `json:"knowledgeCutoff"`
	// ModelID is the runtime id, e.g. "claude-fable-5".
	ModelID string `json:"modelId"`
	// Clock stamps a newly created system message; nil means time.Now.
	Clock Clock `json:"-"`
}

// ModelInfoProvider tells the model who it is: it appends "Current model:
// NAME (ID)" and "Model knowledge cutoff: DATE" to the system message. The
// id alone is not shown, since a bare slug can mislead more than help.
//
// Metadata: modelInfoInjected.
type ModelInfoProvider struct {
	cfg ModelInfoConfig
}

// NewModelInfoProvider returns a ModelInfoProvider.
func NewModelInfoProvider(cfg ModelInfoConfig) *ModelInfoProvider {
	return &ModelInfoProvider{cfg: cfg}
}

// Name returns "ModelInfoProvider".
func (*ModelInfoProvider) Name() string { return NameModelInfo }

// Process appends the model information, when there is any.
func (p *ModelInfoProvider) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if p.cfg.Enabled != nil && !*p.cfg.Enabled {
		return pc, nil
	}
	id := trimJS(p.cfg.ModelID)
	name := trimJS(p.cfg.DisplayName)
	cutoff := trimJS(p.cfg.KnowledgeCutoff)

	var lines []string
	if name != "" {
		label := name
		if id != "" && id != name {
			label = name + " (" + id + ")"
		}
		lines = append(lines, "Current model: "+label)
	}
	if cutoff != "" {
		lines = append(lines, "Model knowledge cutoff: "+cutoff)
	}
	if len(lines) == 0 {
		return pc, nil
	}
	next := appendSystemContent(pc, NameModelInfo, strings.Join(lines, "\n"), p.cfg.Clock)
	next.Metadata["modelInfoInjected"] = true
	return next, nil
}

func (d deps) modelInfo(raw map[string]any) (enginecore.Processor, error) {
	var cfg ModelInfoConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Clock = d.clock
	return NewModelInfoProvider(cfg), nil
}
