package processors

import (
	"context"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// ToolSystemRoleConfig configures ToolSystemRoleProvider.
type ToolSystemRoleConfig struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// Manifests are the tools available to the model.
	Manifests []ToolManifest `json:"manifests"`
	// Model and Provider are passed to CanUseFunctionCalling.
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// CanUseFunctionCalling reports whether the model can call tools; nil
	// means it cannot.
	CanUseFunctionCalling CapabilityFunc `json:"-"`
	// Clock stamps a newly created system message; nil means time.Now.
	Clock Clock `json:"-"`
}

// ToolSystemRoleProvider appends a <tools> block describing the available
// tools (each tool's instructions, or its description) to the system
// message, for models that can call tools.
//
// Metadata: toolSystemRole {contentLength, injected,
// supportsFunctionCall, toolsCount}.
type ToolSystemRoleProvider struct {
	cfg ToolSystemRoleConfig
}

// NewToolSystemRoleProvider returns a ToolSystemRoleProvider.
func NewToolSystemRoleProvider(cfg ToolSystemRoleConfig) *ToolSystemRoleProvider {
	return &ToolSystemRoleProvider{cfg: cfg}
}

// Name returns "ToolSystemRoleProvider".
func (*ToolSystemRoleProvider) Name() string { return NameToolSystemRole }

// Process appends the tools block when there are tools and the model can
// use them.
func (p *ToolSystemRoleProvider) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if p.cfg.Enabled != nil && !*p.cfg.Enabled {
		return pc, nil
	}
	content := p.prompt()
	if isBlank(content) {
		return pc, nil
	}
	next := appendSystemContent(pc, NameToolSystemRole, content, p.cfg.Clock)
	next.Metadata["toolSystemRole"] = map[string]any{
		"contentLength":        float64(utf16Len(content)),
		"injected":             true,
		"supportsFunctionCall": p.cfg.CanUseFunctionCalling.check(p.cfg.Model, p.cfg.Provider),
		"toolsCount":           float64(len(p.cfg.Manifests)),
	}
	return next, nil
}

// prompt renders the tools block, or "" when nothing is to be injected.
func (p *ToolSystemRoleProvider) prompt() string {
	if len(p.cfg.Manifests) == 0 || !p.cfg.CanUseFunctionCalling.check(p.cfg.Model, p.cfg.Provider) {
		return ""
	}
	var tools []string
	for _, m := range p.cfg.Manifests {
		if len(m.API) == 0 && m.SystemRole == "" {
			continue
		}
		name := m.Meta.Title
		if name == "" {
			name = m.Identifier
		}
		if m.SystemRole != "" {
			tools = append(tools, `<tool name="`+name+"\">\n<tool.instructions>"+m.SystemRole+"</tool.instructions>\n</tool>")
			continue
		}
		desc := m.Meta.Description
		if desc == "" {
			desc = "no description"
		}
		tools = append(tools, `<tool name="`+name+`">`+desc+`</tool>`)
	}
	if len(tools) == 0 {
		return ""
	}
	return "<tools description=\"The tools you can use below\">\n" + strings.Join(tools, "\n") + "\n</tools>"
}

func (d deps) toolSystemRole(raw map[string]any) (enginecore.Processor, error) {
	var cfg ToolSystemRoleConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.CanUseFunctionCalling = d.caps.FunctionCalling
	cfg.Clock = d.clock
	return NewToolSystemRoleProvider(cfg), nil
}
