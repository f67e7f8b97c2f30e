package processors

import (
	"context"
	"maps"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// Tool identifiers of the built-in activation tools, as stored in message
// rows.
const (
	activatorIdentifier = "lobe-activator"
	skillsIdentifier    = "lobe-skills"
)

// ActivationResultTrimConfig configures ActivationResultTrim. Both lists
// must say what the system prompt of this very request carries: pass empty
// lists when the tool or skill injection is off, and nothing is trimmed.
type ActivationResultTrimConfig struct {
	// InjectedManifests are the tool manifests whose documentation the
	// system prompt carries (see ToolSystemRoleProvider).
	InjectedManifests []InjectedManifest `json:"injectedManifests"`
	// InjectedSkills are the activated skills whose content the system
	// prompt carries.
	InjectedSkills []InjectedSkill `json:"injectedSkills"`
}

// InjectedManifest identifies a tool manifest; its other fields are
// accepted and ignored.
type InjectedManifest struct {
	Identifier string `json:"identifier"`
}

func (*InjectedManifest) ignoresUnknownFields() {}

// InjectedSkill is a skill whose content is in the system prompt; other
// fields are accepted and ignored.
type InjectedSkill struct {
	Identifier string `json:"identifier"`
	Name       string `json:"name"`
	Content    string `json:"content"`
}

func (*InjectedSkill) ignoresUnknownFields() {}

// ActivationResultTrim shortens the results of activateTools and
// activateSkill calls whose documents the system prompt already carries,
// so that each document reaches the model once. The replacement is a
// fixed confirmation, so a trimmed history stays byte-identical from one
// request to the next and keeps its prompt-cache prefix. An activation
// that is only partly covered by the system prompt is left whole: its
// result is the only place the uncovered part appears.
//
// It belongs after the flatten processors, which turn nested tool results
// into tool messages, and before ToolCallProcessor.
//
// Metadata: activationResultTrim {savedChars, trimmedMessages} (UTF-16
// units), unless nothing is injected.
type ActivationResultTrim struct {
	tools        map[string]bool
	skillsByID   map[string]InjectedSkill
	skillsByName map[string]InjectedSkill
}

// NewActivationResultTrim returns an ActivationResultTrim processor.
func NewActivationResultTrim(cfg ActivationResultTrimConfig) *ActivationResultTrim {
	p := &ActivationResultTrim{
		tools:        make(map[string]bool, len(cfg.InjectedManifests)),
		skillsByID:   make(map[string]InjectedSkill, len(cfg.InjectedSkills)),
		skillsByName: make(map[string]InjectedSkill, len(cfg.InjectedSkills)),
	}
	for _, m := range cfg.InjectedManifests {
		p.tools[m.Identifier] = true
	}
	for _, s := range cfg.InjectedSkills {
		p.skillsByID[s.Identifier] = s
		// activateSkill resolves names without regard to case.
		p.skillsByName[strings.ToLower(s.Name)] = s
	}
	return p
}

// Name returns "ActivationResultTrimProcessor".
func (*ActivationResultTrim) Name() string { return NameActivationResultTrim }

// Process trims the covered activation results.
func (p *ActivationResultTrim) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if len(p.tools) == 0 && len(p.skillsByID) == 0 {
		return pc, nil
	}
	next := pc.Derive()
	saved := 0
	var err error
	var n int
	next.Messages, n, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		trimmed, ok := p.trim(m)
		if !ok {
			return m, false
		}
		saved += utf16Len(m["content"].(string)) - utf16Len(trimmed)
		out := maps.Clone(m)
		out["content"] = trimmed
		return out, true
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["activationResultTrim"] = map[string]any{
		"savedChars":      float64(saved),
		"trimmedMessages": float64(n),
	}
	return next, nil
}

// trim returns the replacement content of m, if it is to be trimmed.
func (p *ActivationResultTrim) trim(m enginecore.Message) (string, bool) {
	if m["role"] != "tool" {
		return "", false
	}
	if s, ok := m["content"].(string); !ok || s == "" {
		return "", false
	}
	plugin, ok := m["plugin"].(map[string]any)
	if !ok {
		return "", false
	}
	identifier, apiName := plugin["identifier"], plugin["apiName"]
	switch {
	case identifier == activatorIdentifier && apiName == "activateTools":
		return p.trimActivateTools(obj(m["pluginState"]))
	case apiName == "activateSkill" && (identifier == skillsIdentifier || identifier == activatorIdentifier):
		return p.trimActivateSkill(m["content"].(string), obj(m["pluginState"]))
	}
	return "", false
}

// injectedSkill finds the injected skill an activation refers to, by
// identifier first and then by name.
func (p *ActivationResultTrim) injectedSkill(state map[string]any) (InjectedSkill, bool) {
	if id, ok := state["identifier"].(string); ok && id != "" {
		if s, ok := p.skillsByID[id]; ok {
			return s, true
		}
	}
	if name, ok := state["name"].(string); ok && name != "" {
		s, ok := p.skillsByName[strings.ToLower(name)]
		return s, ok
	}
	return InjectedSkill{}, false
}

func (p *ActivationResultTrim) trimActivateTools(state map[string]any) (string, bool) {
	tools := arr(state["activatedTools"])
	var skills []map[string]any
	for _, s := range arr(state["activatedSkills"]) {
		if truthy(s) {
			skills = append(skills, obj(s))
		}
	}
	if len(tools) == 0 && len(skills) == 0 {
		// A pure already-active or not-found answer carries no document.
		return "", false
	}
	for _, t := range tools {
		id, _ := dig(t, "identifier").(string)
		if id == "" || !p.tools[id] {
			return "", false
		}
	}
	for _, s := range skills {
		if _, ok := p.injectedSkill(s); !ok {
			return "", false
		}
	}

	var parts []string
	if len(tools) > 0 {
		summaries := make([]string, len(tools))
		for i, t := range tools {
			tool := obj(t)
			apis := ""
			if count, ok := tool["apiCount"].(float64); ok {
				apis = ", " + formatNumber(count) + " API"
				if count != 1 {
					apis += "s"
				}
			}
			summaries[i] = jsString(nameOr(tool)) + " (" + jsString(tool["identifier"]) + apis + ")"
		}
		parts = append(parts, "Successfully activated tools: "+strings.Join(summaries, ", ")+".")
	}
	if len(skills) > 0 {
		names := make([]string, len(skills))
		for i, s := range skills {
			names[i] = jsString(nameOr(s))
		}
		parts = append(parts, "Activated skills: "+strings.Join(names, ", ")+".")
	}
	if list := arr(state["alreadyActive"]); len(list) > 0 {
		parts = append(parts, "Already active: "+joinJS(list)+".")
	}
	if list := arr(state["notFound"]); len(list) > 0 {
		parts = append(parts, "Not found: "+joinJS(list)+".")
	}
	parts = append(parts, "Full usage instructions and API descriptions for the activated items are available in the system prompt.")
	return strings.Join(parts, "\n"), true
}

func (p *ActivationResultTrim) trimActivateSkill(content string, state map[string]any) (string, bool) {
	if !truthy(state["name"]) && !truthy(state["identifier"]) {
		return "", false
	}
	skill, ok := p.injectedSkill(state)
	if !ok || skill.Content == "" {
		return "", false
	}
	name := state["name"]
	if name == nil {
		name = skill.Name
	}
	confirmation := `Skill "` + jsString(name) + `" activated. Its full instructions are available in the system prompt.`
	// What follows the injected body (a resource tree, a directory hint)
	// is not in the system prompt and stays; a result that no longer
	// starts with the body is a stale copy and goes entirely.
	if rest, ok := strings.CutPrefix(content, skill.Content); ok {
		if rest = trimJS(rest); rest != "" {
			return confirmation + "\n\n" + rest, true
		}
	}
	return confirmation, true
}

// nameOr is JavaScript's `x.name ?? x.identifier`.
func nameOr(x map[string]any) any {
	if v := x["name"]; v != nil {
		return v
	}
	return x["identifier"]
}

// joinJS is JavaScript's list.join(", ").
func joinJS(list []any) string {
	parts := make([]string, len(list))
	for i, v := range list {
		if v != nil {
			parts[i] = jsString(v)
		}
	}
	return strings.Join(parts, ", ")
}

func (d deps) activationResultTrim(raw map[string]any) (enginecore.Processor, error) {
	var cfg ActivationResultTrimConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewActivationResultTrim(cfg), nil
}
