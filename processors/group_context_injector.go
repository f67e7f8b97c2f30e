package processors

import (
	"context"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// GroupContextConfig configures GroupContextInjector.
type GroupContextConfig struct {
	// Enabled turns the injector on: the conversation is a group chat.
	Enabled bool `json:"enabled"`
	// CurrentAgentID, CurrentAgentName and CurrentAgentRole ("supervisor"
	// or "participant") describe the agent about to answer.
	CurrentAgentID   string `json:"currentAgentId"`
	CurrentAgentName string `json:"currentAgentName"`
	CurrentAgentRole string `json:"currentAgentRole"`
	// GroupTitle names the group.
	GroupTitle string `json:"groupTitle"`
	// Members are the group's agents.
	Members []GroupMember `json:"members"`
	// SystemPrompt describes the group's purpose.
	SystemPrompt string `json:"systemPrompt"`
	// Clock stamps a newly created injection message; nil means time.Now.
	Clock Clock `json:"-"`
}

// GroupMember is an agent of a group.
type GroupMember struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// groupContextTemplate tells an agent who it is in a group and who else
// is there; the {{...}} fields are filled in order, once each.
const groupContextTemplate = `You are "{{AGENT_NAME}}", acting as a {{AGENT_ROLE}} in the multi-agent group "{{GROUP_TITLE}}".
Your internal agent ID is {{AGENT_ID}} (for system use only, never expose to users).

<group_description>The following describes the purpose and goals of this agent group:

{{SYSTEM_PROMPT}}
</group_description>

<group_participants>The following agents are available in this group:

{{GROUP_MEMBERS}}
</group_participants>

<identity_rules>
- NEVER expose or display agent IDs to users - always refer to agents by their names
</identity_rules>`

// GroupContextInjector tells the agent answering in a multi-agent group
// chat its identity, the group's purpose and its members, in a
// <group_context> block of the injection message before the first user
// message (shared with UserMemoryInjector and KnowledgeInjector).
//
// Metadata: groupContextInjected, whenever enabled (even without a user
// message to inject before, as the reference does).
type GroupContextInjector struct {
	cfg GroupContextConfig
}

// NewGroupContextInjector returns a GroupContextInjector processor.
func NewGroupContextInjector(cfg GroupContextConfig) *GroupContextInjector {
	return &GroupContextInjector{cfg: cfg}
}

// Name returns "GroupContextInjector".
func (*GroupContextInjector) Name() string { return NameGroupContextInjector }

// Process injects the group context.
func (p *GroupContextInjector) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.cfg.Enabled {
		return pc, nil
	}
	next := injectBeforeFirstUser(pc, p.prompt(), p.cfg.Clock)
	next.Metadata["groupContextInjected"] = true
	return next, nil
}

func (p *GroupContextInjector) prompt() string {
	var members []string
	for _, m := range p.cfg.Members {
		you := ""
		if m.ID == p.cfg.CurrentAgentID {
			you = ` you="true"`
		}
		members = append(members, `  <member name="`+m.Name+`" id="`+m.ID+`"`+you+` />`)
	}
	s := groupContextTemplate
	// One after the other, the first occurrence each: a value holding a
	// later field's marker gets it filled, as in the reference.
	for _, r := range [][2]string{
		{"{{AGENT_NAME}}", p.cfg.CurrentAgentName},
		{"{{AGENT_ROLE}}", p.cfg.CurrentAgentRole},
		{"{{AGENT_ID}}", p.cfg.CurrentAgentID},
		{"{{GROUP_TITLE}}", p.cfg.GroupTitle},
		{"{{SYSTEM_PROMPT}}", p.cfg.SystemPrompt},
		{"{{GROUP_MEMBERS}}", strings.Join(members, "\n")},
	} {
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return "<group_context>\n" + s + "\n</group_context>"
}

func (d deps) groupContextInjector(raw map[string]any) (enginecore.Processor, error) {
	var cfg GroupContextConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Clock = d.clock
	return NewGroupContextInjector(cfg), nil
}
