package processors

import (
	"context"
	"slices"

	"github.com/convstream/convstream/enginecore"
)

// Defaults of GroupOrchestrationFilter: the supervisor's coordination tool
// and the calls that only coordinate.
func defaultOrchestrationTools() []string { return []string{"lobe-group-management"} }

func defaultOrchestrationAPIs() []string {
	return []string{"broadcast", "speak", "executeTask", "executeTasks"}
}

// GroupOrchestrationFilterConfig configures GroupOrchestrationFilter.
type GroupOrchestrationFilterConfig struct {
	// AgentMap identifies the supervisor among the group's agents.
	AgentMap map[string]AgentInfo `json:"agentMap"`
	// CurrentAgentID is the agent about to answer; a supervisor sees
	// everything.
	CurrentAgentID string `json:"currentAgentId"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// OrchestrationAPINames are the coordination calls to hide; nil means
	// broadcast, speak, executeTask and executeTasks.
	OrchestrationAPINames []string `json:"orchestrationApiNames"`
	// OrchestrationToolIdentifiers are the coordination tools; nil means
	// lobe-group-management.
	OrchestrationToolIdentifiers []string `json:"orchestrationToolIdentifiers"`
}

// GroupOrchestrationFilter hides the supervisor's coordination traffic
// (broadcast, speak, task dispatch) from participant agents: supervisor
// assistant messages calling a coordination tool and the results of those
// calls are removed. The supervisor's plain messages and other tool calls
// stay. Nothing is filtered when the current agent is the supervisor.
//
// Metadata: orchestrationFilterProcessed {assistantFiltered,
// filteredCount, toolFiltered}.
type GroupOrchestrationFilter struct {
	cfg   GroupOrchestrationFilterConfig
	tools []string
	apis  []string
}

// NewGroupOrchestrationFilter returns a GroupOrchestrationFilter processor.
func NewGroupOrchestrationFilter(cfg GroupOrchestrationFilterConfig) *GroupOrchestrationFilter {
	p := &GroupOrchestrationFilter{cfg: cfg, tools: cfg.OrchestrationToolIdentifiers, apis: cfg.OrchestrationAPINames}
	if p.tools == nil {
		p.tools = defaultOrchestrationTools()
	}
	if p.apis == nil {
		p.apis = defaultOrchestrationAPIs()
	}
	return p
}

// Name returns "GroupOrchestrationFilterProcessor".
func (*GroupOrchestrationFilter) Name() string { return NameGroupOrchestrationFilter }

// Process removes the coordination messages.
func (p *GroupOrchestrationFilter) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	if (p.cfg.Enabled != nil && !*p.cfg.Enabled) || p.cfg.AgentMap == nil {
		return next, nil
	}
	if p.cfg.CurrentAgentID != "" && p.cfg.AgentMap[p.cfg.CurrentAgentID].Role == "supervisor" {
		return next, nil
	}

	assistants, tools := 0, 0
	out := make([]enginecore.Message, 0, len(pc.Messages))
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		if p.isSupervisor(m) {
			if m["role"] == "assistant" && slices.ContainsFunc(arr(m["tools"]), p.isOrchestration) {
				assistants++
				continue
			}
			if m["role"] == "tool" && truthy(m["plugin"]) && p.isOrchestration(m["plugin"]) {
				tools++
				continue
			}
		}
		out = append(out, m)
	}
	if assistants+tools > 0 {
		next.Messages = out
	}
	next.Metadata["orchestrationFilterProcessed"] = map[string]any{
		"assistantFiltered": float64(assistants),
		"filteredCount":     float64(assistants + tools),
		"toolFiltered":      float64(tools),
	}
	return next, nil
}

func (p *GroupOrchestrationFilter) isSupervisor(m enginecore.Message) bool {
	id := m["agentId"]
	if !truthy(id) {
		return false
	}
	agent, ok := p.cfg.AgentMap[jsString(id)]
	return ok && agent.Role == "supervisor"
}

func (p *GroupOrchestrationFilter) isOrchestration(tool any) bool {
	t := obj(tool)
	if t == nil {
		return false
	}
	identifier, _ := or(t["identifier"], "").(string)
	apiName, _ := or(t["apiName"], "").(string)
	return slices.Contains(p.tools, identifier) && slices.Contains(p.apis, apiName)
}

func (d deps) groupOrchestrationFilter(raw map[string]any) (enginecore.Processor, error) {
	var cfg GroupOrchestrationFilterConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewGroupOrchestrationFilter(cfg), nil
}
