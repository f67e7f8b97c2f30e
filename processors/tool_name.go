package processors

import (
	"crypto/md5"
	"encoding/hex"
	"slices"
	"strings"
)

// ToolNameFunc names a tool call for the model from the tool's identifier,
// API name and type.
type ToolNameFunc func(identifier, apiName, toolType string) string

const (
	toolNameSeparator = "____"
	toolNameHashMark  = "MD5HASH_"
	// toolNameLimit is OpenAI's function name limit; names must stay below.
	toolNameLimit = 64
)

// isToolNamePart reports whether s only holds [A-Za-z0-9_-].
func isToolNamePart(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// ToolManifest describes a tool (a plugin) and its APIs. When decoded from
// a spec, fields other than these are ignored: manifests carry many
// settings the pipeline does not use.
type ToolManifest struct {
	Identifier string    `json:"identifier"`
	Type       string    `json:"type,omitempty"`
	SystemRole string    `json:"systemRole,omitempty"`
	Meta       ToolMeta  `json:"meta"`
	API        []ToolAPI `json:"api"`
}

// ToolMeta is the display information of a tool.
type ToolMeta struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// ToolAPI is one callable API of a tool.
type ToolAPI struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

func (*ToolManifest) ignoresUnknownFields() {}
func (*ToolMeta) ignoresUnknownFields()     {}
func (*ToolAPI) ignoresUnknownFields()      {}

// ToolCallRef is a tool call as a model returns it.
type ToolCallRef struct {
	ID               string
	Name             string
	Arguments        string
	ThoughtSignature string
}

// ResolvedToolCall is a tool call mapped back to its tool.
type ResolvedToolCall struct {
	ID               string
	Identifier       string
	APIName          string
	Type             string
	Arguments        string
	ThoughtSignature string
}

// ToolNameResolver turns (identifier, API, type) into function names that
// strict providers accept, and maps names back. Names are
// IDENTIFIER____API[____TYPE]; a component that is not [A-Za-z0-9_-] or
// that makes the name 64 characters or longer is replaced by MD5HASH_ and
// the first 12 hex digits of its MD5.
type ToolNameResolver struct{}

// NewToolNameResolver returns a ToolNameResolver.
func NewToolNameResolver() *ToolNameResolver { return &ToolNameResolver{} }

func hashTool(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

func hashComponent(s string) string { return toolNameHashMark + hashTool(s) }

func normalizeComponent(s string) string {
	if s != "" && !isToolNamePart(s) {
		return hashComponent(s)
	}
	return s
}

// Generate returns the function name for a tool API. An empty type,
// "builtin" and "default" add no type suffix.
func (*ToolNameResolver) Generate(identifier, apiName, toolType string) string {
	suffix := ""
	if toolType != "" && toolType != "builtin" && toolType != "default" {
		suffix = toolNameSeparator + normalizeComponent(toolType)
	}
	id := normalizeComponent(identifier)
	api := normalizeComponent(apiName)
	name := id + toolNameSeparator + api + suffix
	if utf16Len(name) >= toolNameLimit {
		api = hashComponent(apiName)
		name = id + toolNameSeparator + api + suffix
		if utf16Len(name) >= toolNameLimit {
			id = hashComponent(identifier)
			name = id + toolNameSeparator + api + suffix
		}
	}
	return name
}

// Resolve maps tool calls returned by a model back to their tools, using
// manifests keyed by identifier. When offered is not nil, only calls to
// those function names are accepted. A bare API name without identifier is
// accepted when exactly one offered manifest has such an API. Calls that
// cannot be resolved are dropped.
func (r *ToolNameResolver) Resolve(calls []ToolCallRef, manifests map[string]ToolManifest, offered []string) []ResolvedToolCall {
	var offeredSet map[string]bool
	if offered != nil {
		offeredSet = make(map[string]bool, len(offered))
		for _, n := range offered {
			offeredSet[n] = true
		}
	}

	out := make([]ResolvedToolCall, 0, len(calls))
	for _, call := range calls {
		parts := strings.Split(call.Name, toolNameSeparator)
		identifier := parts[0]
		apiName := ""
		if len(parts) > 1 {
			apiName = parts[1]
		}
		toolType, hasType := "", false
		if len(parts) > 2 {
			toolType, hasType = parts[2], true
		}

		if apiName == "" {
			var matches []string
			for _, id := range sortedManifestIDs(manifests) {
				m := manifests[id]
				for _, api := range m.API {
					if api.Name != identifier {
						continue
					}
					if offeredSet != nil && !offeredSet[r.Generate(id, api.Name, m.Type)] {
						break
					}
					matches = append(matches, id)
					break
				}
			}
			if len(matches) != 1 {
				continue
			}
			identifier, apiName = matches[0], parts[0]
		} else if offeredSet != nil && !offeredSet[call.Name] {
			continue
		}

		if hashed, ok := strings.CutPrefix(identifier, toolNameHashMark); ok {
			for _, id := range sortedManifestIDs(manifests) {
				if hashTool(id) == hashed {
					identifier = id
					break
				}
			}
		}

		resolved := ResolvedToolCall{
			ID:               call.ID,
			Identifier:       identifier,
			APIName:          apiName,
			Arguments:        call.Arguments,
			ThoughtSignature: call.ThoughtSignature,
		}
		m, known := manifests[identifier]
		switch {
		case hasType:
			resolved.Type = toolType
		case known && m.Type != "":
			resolved.Type = m.Type
		default:
			resolved.Type = "builtin"
		}
		if hashed, ok := strings.CutPrefix(apiName, toolNameHashMark); ok && known {
			for _, api := range m.API {
				if hashTool(api.Name) == hashed {
					resolved.APIName = api.Name
					break
				}
			}
		}
		out = append(out, resolved)
	}
	return out
}

func sortedManifestIDs(m map[string]ToolManifest) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids) // deterministic matching
	return ids
}
