package processors

import (
	"context"
	"maps"

	"github.com/convstream/convstream/enginecore"
)

// CompressedGroupRoleTransform turns role "compressedGroup" messages (the
// UI's compressed-history cards) into user messages whose content is the
// summary wrapped in <compressed_history_summary>.
//
// Metadata: compressedGroupRoleTransformProcessed.
type CompressedGroupRoleTransform struct{}

// NewCompressedGroupRoleTransform returns a CompressedGroupRoleTransform processor.
func NewCompressedGroupRoleTransform() *CompressedGroupRoleTransform {
	return &CompressedGroupRoleTransform{}
}

// Name returns "CompressedGroupRoleTransformProcessor".
func (*CompressedGroupRoleTransform) Name() string { return NameCompressedGroupRoleTransform }

// Process transforms the compressed groups.
func (*CompressedGroupRoleTransform) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	next := pc.Derive()
	var n int
	var err error
	next.Messages, n, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		if m["role"] != "compressedGroup" {
			return m, false
		}
		content := ""
		if c := m["content"]; truthy(c) {
			content = "<compressed_history_summary>\n" + jsString(c) + "\n</compressed_history_summary>"
		}
		out := maps.Clone(m)
		out["content"] = content
		out["role"] = "user"
		return out, true
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["compressedGroupRoleTransformProcessed"] = float64(n)
	return next, nil
}

func (d deps) compressedGroupRoleTransform(raw map[string]any) (enginecore.Processor, error) {
	return noConfig(raw, NewCompressedGroupRoleTransform())
}
