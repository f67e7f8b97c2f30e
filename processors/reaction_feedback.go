package processors

import (
	"context"
	"maps"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// ReactionFeedbackConfig configures ReactionFeedback.
type ReactionFeedbackConfig struct {
	// Enabled must be true for the processor to do anything.
	Enabled bool `json:"enabled"`
}

// ReactionFeedback turns the user's emoji reactions on assistant messages
// (metadata.reactions) into a "[User Feedback Emoji: ...]" line at the
// start of the next user message, where the model pays attention to it.
// Reactions pending when a user message has non-text content are dropped.
//
// Metadata: reactionFeedbackProcessed (number of emojis injected).
type ReactionFeedback struct {
	cfg ReactionFeedbackConfig
}

// NewReactionFeedback returns a ReactionFeedback processor.
func NewReactionFeedback(cfg ReactionFeedbackConfig) *ReactionFeedback {
	return &ReactionFeedback{cfg: cfg}
}

// Name returns "ReactionFeedbackProcessor".
func (*ReactionFeedback) Name() string { return NameReactionFeedback }

// Process injects the feedback.
func (p *ReactionFeedback) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.cfg.Enabled {
		return pc, nil
	}
	next := pc.Derive()
	var pending []string
	injected := 0
	var err error
	next.Messages, _, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		switch m["role"] {
		case "assistant":
			for _, r := range arr(dig(m, "metadata", "reactions")) {
				if e := dig(r, "emoji"); truthy(e) {
					pending = append(pending, jsString(e))
				}
			}
		case "user":
			if len(pending) == 0 {
				return m, false
			}
			emojis := pending
			pending = nil
			content, ok := m["content"].(string)
			if !ok {
				return m, false
			}
			out := maps.Clone(m)
			out["content"] = "[User Feedback Emoji: " + strings.Join(emojis, " ") + "]\n\n" + content
			injected += len(emojis)
			return out, true
		}
		return m, false
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["reactionFeedbackProcessed"] = float64(injected)
	return next, nil
}

func (d deps) reactionFeedback(raw map[string]any) (enginecore.Processor, error) {
	var cfg ReactionFeedbackConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return NewReactionFeedback(cfg), nil
}
