package processors

import (
	"encoding/json"
	"slices"
	"strings"
)

// SanitizeToolArguments makes sure a tool call's arguments string is valid
// JSON before it is replayed to a provider; strict providers reject a whole
// request over one malformed call in the history. Valid JSON is returned
// unchanged (keeping prompt-cache keys stable); JSON cut short is completed
// and re-serialised; anything else, and an empty string, becomes "{}".
func SanitizeToolArguments(args string) string {
	if args == "" {
		return "{}"
	}
	if json.Valid([]byte(args)) {
		return args
	}
	v, err := parsePartialJSON(args)
	if err != nil || (v.kind != jsonObject && v.kind != jsonArray) {
		return "{}"
	}
	return string(v.appendJSON(nil))
}

// ParseToolArguments parses a tool call's arguments into an object,
// completing JSON cut short, and repairs a common model mistake using the
// API's parameter schema: when required fields are missing and another
// field's string value swallowed them (`{"a": "x\", \"b\": 1}"`), the
// object is rebuilt from that string. manifest may be nil; anything that
// cannot be parsed gives an empty object.
func ParseToolArguments(manifest *ToolManifest, apiName, args string) map[string]any {
	parsed := parseArgumentsObject(args)
	if manifest == nil {
		return parsed
	}
	idx := slices.IndexFunc(manifest.API, func(a ToolAPI) bool { return a.Name == apiName })
	if idx < 0 {
		return parsed
	}
	return repairArguments(parsed, requiredFields(manifest.API[idx].Parameters))
}

func parseArgumentsObject(args string) map[string]any {
	var out map[string]any
	if err := json.Unmarshal([]byte(args), &out); err == nil && out != nil {
		return out
	}
	v, err := parsePartialJSON(args)
	if err != nil || v.kind != jsonObject {
		return map[string]any{}
	}
	if err := json.Unmarshal(v.appendJSON(nil), &out); err != nil || out == nil {
		return map[string]any{}
	}
	return out
}

func requiredFields(schema map[string]any) []string {
	var out []string
	for _, f := range arr(schema["required"]) {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func repairArguments(parsed map[string]any, required []string) map[string]any {
	var missing []string
	for _, f := range required {
		if _, ok := parsed[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return parsed
	}
	for _, key := range sortedKeys(parsed) {
		value, ok := parsed[key].(string)
		if !ok {
			continue
		}
		swallowed := slices.ContainsFunc(missing, func(f string) bool {
			return strings.Contains(value, `", "`+f+`":`) || strings.Contains(value, `", \"`+f+`\":`)
		})
		if !swallowed {
			continue
		}
		var repaired map[string]any
		if json.Unmarshal([]byte(`{"`+key+`": "`+value), &repaired) != nil {
			continue
		}
		complete := true
		for _, f := range required {
			if _, ok := repaired[f]; !ok {
				complete = false
				break
			}
		}
		if complete {
			return repaired
		}
	}
	return parsed
}
