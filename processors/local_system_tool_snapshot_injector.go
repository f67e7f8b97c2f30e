package processors

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// LocalSystemToolSnapshotInjectorConfig configures
// LocalSystemToolSnapshotInjector.
type LocalSystemToolSnapshotInjectorConfig struct {
	// Enabled turns the injector on.
	Enabled bool `json:"enabled"`
}

// LocalSystemToolSnapshotInjector replays the local file reads a user
// attached when sending (metadata.localSystemToolSnapshots of a user
// message) as a real tool call and its result, right after that message,
// so that the model sees them the way it sees its own reads.
//
// Arguments are written as JSON with sorted keys: messages here are maps,
// which keep no key order.
//
// Metadata: LocalSystemToolSnapshotInjectorInjectedCount, when any
// snapshot was replayed.
type LocalSystemToolSnapshotInjector struct {
	cfg LocalSystemToolSnapshotInjectorConfig
}

// NewLocalSystemToolSnapshotInjector returns a
// LocalSystemToolSnapshotInjector processor.
func NewLocalSystemToolSnapshotInjector(cfg LocalSystemToolSnapshotInjectorConfig) *LocalSystemToolSnapshotInjector {
	return &LocalSystemToolSnapshotInjector{cfg: cfg}
}

// Name returns "LocalSystemToolSnapshotInjector".
func (*LocalSystemToolSnapshotInjector) Name() string { return NameLocalSystemToolSnapshotInjector }

// Process inserts the snapshot call and result pairs.
func (p *LocalSystemToolSnapshotInjector) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.cfg.Enabled {
		return pc, nil
	}
	var out []enginecore.Message
	injected := 0
	for i, m := range pc.Messages {
		if err := interrupted(ctx, i, len(pc.Messages)); err != nil {
			return nil, err
		}
		var snapshots []any
		if m["role"] == "user" {
			snapshots = arr(dig(m, "metadata", "localSystemToolSnapshots"))
		}
		if len(snapshots) == 0 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = make([]enginecore.Message, i, len(pc.Messages)+2*len(snapshots))
			copy(out, pc.Messages[:i])
		}
		out = append(out, m)
		for _, s := range snapshots {
			call, result := snapshotPair(m, obj(s))
			out = append(out, call, result)
			injected++
		}
	}
	if out == nil {
		return pc, nil
	}
	next := pc.Derive()
	next.Messages = out
	next.Metadata["LocalSystemToolSnapshotInjectorInjectedCount"] = float64(injected)
	return next, nil
}

// snapshotPair builds the assistant call and the tool result replaying
// snapshot s of user message m; both take m's timestamps.
func snapshotPair(m enginecore.Message, s map[string]any) (enginecore.Message, enginecore.Message) {
	tool := map[string]any{"type": "builtin"}
	copyField(tool, s, "apiName")
	copyField(tool, s, "identifier")
	if id, ok := s["toolCallId"]; ok {
		tool["id"] = id
	}
	if args, ok := s["arguments"]; ok {
		tool["arguments"] = stringifyJSON(args)
	}
	prefix := templateString(m, "id") + "-" + templateString(s, "snapshotId")

	call := enginecore.Message{"content": "", "id": prefix + "-assistant", "role": "assistant", "tools": []any{tool}}
	copyField(call, m, "createdAt")
	copyField(call, m, "updatedAt")

	content := s["content"]
	if content == nil {
		content = ""
	}
	result := enginecore.Message{"content": content, "id": prefix + "-tool", "role": "tool", "plugin": maps.Clone(tool)}
	copyField(result, s, "toolCallId")
	if v, ok := result["toolCallId"]; ok {
		result["tool_call_id"] = v
		delete(result, "toolCallId")
	}
	if v, ok := s["error"]; ok {
		result["pluginError"] = v
	}
	if v, ok := s["state"]; ok {
		result["pluginState"] = v
	}
	copyField(result, m, "createdAt")
	copyField(result, m, "updatedAt")
	return call, result
}

// templateString is how JavaScript writes x[key] into a template literal,
// a missing one being "undefined".
func templateString(x map[string]any, key string) string {
	v, ok := x[key]
	if !ok {
		return "undefined"
	}
	return jsString(v)
}

// stringifyJSON writes v as JSON without HTML escaping, as JSON.stringify
// does (object keys sorted).
func stringifyJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (d deps) localSystemToolSnapshotInjector(raw map[string]any) (enginecore.Processor, error) {
	var cfg LocalSystemToolSnapshotInjectorConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewLocalSystemToolSnapshotInjector(cfg), nil
}
