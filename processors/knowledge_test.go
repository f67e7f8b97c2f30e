package processors_test

import (
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestKnowledgeInjector(t *testing.T) {
	cfg := processors.KnowledgeConfig{
		FileContents: []processors.KnowledgeFile{
			{FileID: "f1", Filename: "a.md", Content: "Alpha"},
			{FileID: "f2", Filename: "b.pdf", Error: "unreadable"},
		},
		KnowledgeBases: []processors.KnowledgeBase{{ID: "kb1", Name: "Docs", Description: "All docs"}, {ID: "kb2", Name: "Misc"}},
		Clock:          fixedClock,
	}
	msgs := parseMessages(t, `[{"id":"s","role":"system","content":"Sys"},{"id":"u1","role":"user","content":"q"}]`)
	out := process(t, processors.NewKnowledgeInjector(cfg), msgs)
	want := "<agent_knowledge>\n<instruction>The following files and knowledge bases are available. For files, refer to their content directly. For knowledge bases, use the searchKnowledgeBase tool to find relevant information.</instruction>\n" +
		"<files totalCount=\"2\">\n<file id=\"f1\" name=\"a.md\">\nAlpha\n</file>\n<file id=\"f2\" name=\"b.pdf\" error=\"unreadable\" />\n</files>\n" +
		"<knowledge_bases totalCount=\"2\">\n<knowledge_base id=\"kb1\" name=\"Docs\" description=\"All docs\" />\n<knowledge_base id=\"kb2\" name=\"Misc\" />\n</knowledge_bases>\n</agent_knowledge>"
	assertJSON(t, out.Messages[1], `{"content":`+js(want)+`,"createdAt":1796008320000,"id":"system-injection-1796008320000","meta":{"systemInjection":true},"role":"user","updatedAt":1796008320000}`)
	assertJSON(t, out.Metadata, `{"knowledgeInjected":true,"filesCount":2,"knowledgeBasesCount":2}`)

	// No user message: nothing injected, but the metadata still says what was configured.
	out = process(t, processors.NewKnowledgeInjector(cfg), msgs[:1])
	if len(out.Messages) != 1 || out.Metadata["knowledgeInjected"] != true {
		t.Fatalf("without user message: %v %v", out.Messages, out.Metadata)
	}
	if out := process(t, processors.NewKnowledgeInjector(processors.KnowledgeConfig{}), msgs); len(out.Messages) != 2 || len(out.Metadata) != 0 {
		t.Fatal("empty knowledge injected")
	}
}
