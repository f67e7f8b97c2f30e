package processors

import (
	"context"
	"strconv"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// KnowledgeFile is the content of a file attached to the agent.
type KnowledgeFile struct {
	FileID   string `json:"fileId"`
	Filename string `json:"filename"`
	Content  string `json:"content"`
	// Error, when set, replaces the content: the file could not be read.
	Error string `json:"error,omitempty"`
}

// KnowledgeBase is a knowledge base the agent can search.
type KnowledgeBase struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

func (*KnowledgeFile) ignoresUnknownFields() {}
func (*KnowledgeBase) ignoresUnknownFields() {}

// KnowledgeConfig configures KnowledgeInjector.
type KnowledgeConfig struct {
	FileContents   []KnowledgeFile `json:"fileContents"`
	KnowledgeBases []KnowledgeBase `json:"knowledgeBases"`
	// Clock stamps a newly created injection message; nil means time.Now.
	Clock Clock `json:"-"`
}

// KnowledgeInjector adds the agent's knowledge, file contents and the list
// of searchable knowledge bases, in an <agent_knowledge> block placed
// before the first user message.
//
// Metadata: knowledgeInjected, filesCount, knowledgeBasesCount.
type KnowledgeInjector struct {
	cfg KnowledgeConfig
}

// NewKnowledgeInjector returns a KnowledgeInjector.
func NewKnowledgeInjector(cfg KnowledgeConfig) *KnowledgeInjector {
	return &KnowledgeInjector{cfg: cfg}
}

// Name returns "KnowledgeInjector".
func (*KnowledgeInjector) Name() string { return NameKnowledgeInjector }

// Process injects the knowledge block, when there is knowledge.
func (p *KnowledgeInjector) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	files, bases := p.cfg.FileContents, p.cfg.KnowledgeBases
	if len(files) == 0 && len(bases) == 0 {
		return pc, nil
	}
	next := injectBeforeFirstUser(pc, knowledgePrompt(files, bases), p.cfg.Clock)
	next.Metadata["knowledgeInjected"] = true
	next.Metadata["filesCount"] = float64(len(files))
	next.Metadata["knowledgeBasesCount"] = float64(len(bases))
	return next, nil
}

func knowledgePrompt(files []KnowledgeFile, bases []KnowledgeBase) string {
	var b strings.Builder
	b.WriteString("<agent_knowledge>\n")
	switch {
	case len(files) > 0 && len(bases) > 0:
		b.WriteString("<instruction>The following files and knowledge bases are available. For files, refer to their content directly. For knowledge bases, use the searchKnowledgeBase tool to find relevant information.</instruction>")
	case len(files) > 0:
		b.WriteString("<instruction>The following files are available. Refer to their content directly to answer questions. No knowledge bases are associated.</instruction>")
	default:
		b.WriteString("<instruction>The following knowledge bases are available for semantic search. Use the searchKnowledgeBase tool to find relevant information.</instruction>")
	}
	if len(files) > 0 {
		b.WriteString("\n<files totalCount=\"" + strconv.Itoa(len(files)) + "\">\n")
		for i, f := range files {
			if i > 0 {
				b.WriteByte('\n')
			}
			if f.Error != "" {
				b.WriteString(`<file id="` + f.FileID + `" name="` + f.Filename + `" error="` + f.Error + `" />`)
			} else {
				b.WriteString(`<file id="` + f.FileID + `" name="` + f.Filename + "\">\n" + f.Content + "\n</file>")
			}
		}
		b.WriteString("\n</files>")
	}
	if len(bases) > 0 {
		b.WriteString("\n<knowledge_bases totalCount=\"" + strconv.Itoa(len(bases)) + "\">\n")
		for i, kb := range bases {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(`<knowledge_base id="` + kb.ID + `" name="` + kb.Name + `"`)
			if kb.Description != "" {
				b.WriteString(` description="` + kb.Description + `"`)
			}
			b.WriteString(" />")
		}
		b.WriteString("\n</knowledge_bases>")
	}
	b.WriteString("\n</agent_knowledge>")
	return b.String()
}

func (d deps) knowledge(raw map[string]any) (enginecore.Processor, error) {
	var cfg KnowledgeConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Clock = d.clock
	return NewKnowledgeInjector(cfg), nil
}
