package processors

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/convstream/convstream/enginecore"
)

// UserMemories is what is remembered about the user.
type UserMemories struct {
	Persona     *MemoryPersona     `json:"persona"`
	Identities  []MemoryIdentity   `json:"identities"`
	Contexts    []MemoryContext    `json:"contexts"`
	Experiences []MemoryExperience `json:"experiences"`
	Preferences []MemoryPreference `json:"preferences"`
}

// MemoryPersona is the high-level picture of the user.
type MemoryPersona struct {
	Narrative string `json:"narrative"`
	Tagline   string `json:"tagline"`
}

// MemoryIdentity is a fact about who the user is.
type MemoryIdentity struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Role        string `json:"role"`
	Description string `json:"description"`
	// CapturedAt is an ISO 8601 date or date-time.
	CapturedAt string `json:"capturedAt"`
}

// MemoryContext is background about the user's situation.
type MemoryContext struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// MemoryExperience is a past situation and what was learnt from it.
type MemoryExperience struct {
	ID          string `json:"id"`
	Situation   string `json:"situation"`
	KeyLearning string `json:"keyLearning"`
}

// MemoryPreference is a standing directive from the user.
type MemoryPreference struct {
	ID                   string `json:"id"`
	ConclusionDirectives string `json:"conclusionDirectives"`
}

func (*UserMemories) ignoresUnknownFields()     {}
func (*MemoryPersona) ignoresUnknownFields()    {}
func (*MemoryIdentity) ignoresUnknownFields()   {}
func (*MemoryContext) ignoresUnknownFields()    {}
func (*MemoryExperience) ignoresUnknownFields() {}
func (*MemoryPreference) ignoresUnknownFields() {}

// UserMemoryConfig configures UserMemoryInjector.
type UserMemoryConfig struct {
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// Memories are injected when they hold anything meaningful.
	Memories *UserMemories `json:"memories"`
	// Clock stamps a newly created injection message; nil means time.Now.
	Clock Clock `json:"-"`
}

// UserMemoryInjector adds what is remembered about the user, in a
// <user_memory> block placed before the first user message.
//
// Metadata: userMemoryInjected, set whenever memories are configured (even
// when disabled or empty), as the reference does.
type UserMemoryInjector struct {
	cfg UserMemoryConfig
}

// NewUserMemoryInjector returns a UserMemoryInjector.
func NewUserMemoryInjector(cfg UserMemoryConfig) *UserMemoryInjector {
	return &UserMemoryInjector{cfg: cfg}
}

// Name returns "UserMemoryInjector".
func (*UserMemoryInjector) Name() string { return NameUserMemoryInjector }

// Process injects the memories block.
func (p *UserMemoryInjector) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if p.cfg.Memories == nil {
		return pc, nil
	}
	var next *enginecore.PipelineContext
	enabled := p.cfg.Enabled == nil || *p.cfg.Enabled
	if content := userMemoryPrompt(p.cfg.Memories); enabled && content != "" {
		next = injectBeforeFirstUser(pc, content, p.cfg.Clock)
	} else {
		next = pc.Derive()
	}
	next.Metadata["userMemoryInjected"] = true
	return next, nil
}

func userMemoryPrompt(m *UserMemories) string {
	hasPersona := m.Persona != nil && (m.Persona.Narrative != "" || m.Persona.Tagline != "")
	var identities []MemoryIdentity
	for _, it := range m.Identities {
		if it.ID != "" || it.Description != "" || it.Role != "" || it.Type != "" {
			identities = append(identities, it)
		}
	}
	var contexts []MemoryContext
	for _, it := range m.Contexts {
		if it.ID != "" || it.Title != "" || it.Description != "" {
			contexts = append(contexts, it)
		}
	}
	var experiences []MemoryExperience
	for _, it := range m.Experiences {
		if it.ID != "" || it.Situation != "" || it.KeyLearning != "" {
			experiences = append(experiences, it)
		}
	}
	var preferences []MemoryPreference
	for _, it := range m.Preferences {
		if it.ConclusionDirectives != "" {
			preferences = append(preferences, it)
		}
	}
	if !hasPersona && len(identities) == 0 && len(contexts) == 0 && len(experiences) == 0 && len(preferences) == 0 {
		return ""
	}

	parts := []string{"<instruction>The following are memories about this user retrieved from previous conversations. Use this information to personalize your responses and maintain continuity.</instruction>"}
	if hasPersona {
		tagline := ""
		if m.Persona.Tagline != "" {
			tagline = ` tagline="` + m.Persona.Tagline + `"`
		}
		parts = append(parts, "<persona"+tagline+">\n"+m.Persona.Narrative+"\n</persona>")
	}
	if len(identities) > 0 {
		lines := make([]string, len(identities))
		for i, it := range identities {
			var attrs strings.Builder
			if it.Type != "" {
				attrs.WriteString(` type="` + it.Type + `"`)
			}
			if it.Role != "" {
				attrs.WriteString(` role="` + it.Role + `"`)
			}
			if it.ID != "" {
				attrs.WriteString(` id="` + it.ID + `"`)
			}
			if it.CapturedAt != "" {
				attrs.WriteString(` capturedAt="` + dateOnly(it.CapturedAt) + `"`)
			}
			lines[i] = "  <identity" + attrs.String() + ">" + it.Description + "</identity>"
		}
		parts = append(parts, section("identities", lines))
	}
	if len(contexts) > 0 {
		lines := make([]string, len(contexts))
		for i, it := range contexts {
			lines[i] = `  <context id="` + it.ID + `" title="` + it.Title + `">` + it.Description + "</context>"
		}
		parts = append(parts, section("contexts", lines))
	}
	if len(experiences) > 0 {
		lines := make([]string, len(experiences))
		for i, it := range experiences {
			lines[i] = `  <experience id="` + it.ID + "\">\n    <situation>" + it.Situation +
				"</situation>\n    <key_learning>" + it.KeyLearning + "</key_learning>\n  </experience>"
		}
		parts = append(parts, section("experiences", lines))
	}
	if len(preferences) > 0 {
		lines := make([]string, len(preferences))
		for i, it := range preferences {
			lines[i] = `  <preference id="` + it.ID + `">` + it.ConclusionDirectives + "</preference>"
		}
		parts = append(parts, section("preferences", lines))
	}
	return "<user_memory>\n" + strings.Join(parts, "\n") + "\n</user_memory>"
}

func section(tag string, lines []string) string {
	return "<" + tag + ` count="` + strconv.Itoa(len(lines)) + "\">\n" + strings.Join(lines, "\n") + "\n</" + tag + ">"
}

// dateOnly renders an ISO 8601 date or date-time as its UTC date
// (YYYY-MM-DD), or "" when it cannot be parsed.
func dateOnly(s string) string {
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", time.DateOnly, "2006-01", "2006"}
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format(time.DateOnly)
		}
	}
	return ""
}

func (d deps) userMemory(raw map[string]any) (enginecore.Processor, error) {
	var cfg UserMemoryConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Clock = d.clock
	return NewUserMemoryInjector(cfg), nil
}
