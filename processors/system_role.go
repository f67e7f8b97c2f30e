package processors

import (
	"context"

	"github.com/convstream/convstream/enginecore"
)

// SystemRoleConfig configures SystemRoleInjector.
type SystemRoleConfig struct {
	// SystemRole is the agent's system prompt.
	SystemRole string `json:"systemRole"`
	// Clock stamps a newly created system message; nil means time.Now.
	Clock Clock `json:"-"`
}

// SystemRoleInjector puts the agent's system role into the system message:
// appended to an existing system message, or as a new first message.
//
// Metadata: systemRoleInjected.
type SystemRoleInjector struct {
	cfg SystemRoleConfig
}

// NewSystemRoleInjector returns a SystemRoleInjector.
func NewSystemRoleInjector(cfg SystemRoleConfig) *SystemRoleInjector {
	return &SystemRoleInjector{cfg: cfg}
}

// Name returns "SystemRoleInjector".
func (*SystemRoleInjector) Name() string { return NameSystemRoleInjector }

// Process injects the system role, unless it is blank.
func (p *SystemRoleInjector) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if isBlank(p.cfg.SystemRole) {
		return pc, nil
	}
	next := appendSystemContent(pc, NameSystemRoleInjector, p.cfg.SystemRole, p.cfg.Clock)
	next.Metadata["systemRoleInjected"] = true
	return next, nil
}

func (d deps) systemRole(raw map[string]any) (enginecore.Processor, error) {
	// A systemRole that is not a string counts as none: the value comes from
	// stored agent settings, which the reference tolerates being malformed.
	var cfg struct {
		SystemRole optionalText `json:"systemRole"`
	}
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewSystemRoleInjector(SystemRoleConfig{SystemRole: string(cfg.SystemRole), Clock: d.clock}), nil
}
