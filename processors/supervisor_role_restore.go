package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// SupervisorRoleRestore turns role "supervisor" messages, a UI-only role
// for group orchestration, back into assistant messages.
//
// Metadata: supervisorRoleRestoreProcessed.
type SupervisorRoleRestore struct{}

// NewSupervisorRoleRestore returns a SupervisorRoleRestore processor.
func NewSupervisorRoleRestore() *SupervisorRoleRestore { return &SupervisorRoleRestore{} }

// Name returns "SupervisorRoleRestoreProcessor".
func (*SupervisorRoleRestore) Name() string { return NameSupervisorRoleRestore }

// Process restores the assistant role.
func (*SupervisorRoleRestore) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	var err error
	next.Messages, n, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "supervisor" {
			return m, false
		}
		out := maps.Clone(m)
		out["role"] = "assistant"
		return out, true
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["supervisorRoleRestoreProcessed"] = float64(n)
	return next, nil
}

func (d deps) supervisorRoleRestore(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewSupervisorRoleRestore())
}
