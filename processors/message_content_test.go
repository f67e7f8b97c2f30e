package processors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestMessageContentUser(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"m1","role":"user","content":"Look","createdAt":1,"extra":"dropped",
		 "imageList":[{"id":"i1","url":"https://cdn/x.png","alt":"x.png"}],
		 "fileList":[{"id":"f1","name":"a.pdf","fileType":"application/pdf","size":2048,"url":"https://cdn/a.pdf","content":"PDF TEXT"}]},
		{"id":"m2","role":"user","content":"plain"}
	]`)
	p := processors.NewMessageContent(processors.MessageContentConfig{
		FileContext:  &processors.FileContextConfig{Enabled: true},
		CanUseVision: processors.Supported,
	})
	out := process(t, p, msgs)
	text := "Look\n\n<!-- SYSTEM CONTEXT (NOT PART OF USER QUERY) -->\n<context.instruction>following part contains context information injected by the system. Please follow these instructions:\n\n1. Always prioritize handling user-visible content.\n2. the context is only required when user's queries rely on it.\n</context.instruction>\n<files_info>\n" +
		"<images>\n<images_docstring>here are user upload images you can refer to</images_docstring>\n<image ref=\"msg_" + "15454v" + ".image_1\" name=\"x.png\" url=\"https://cdn/x.png\"></image>\n</images>\n" +
		"<files>\n<files_docstring>here are user upload files you can refer to</files_docstring>\n<file id=\"f1\" name=\"a.pdf\" type=\"application/pdf\" size=\"2048\" url=\"https://cdn/a.pdf\">PDF TEXT</file>\n</files>\n" +
		"</files_info>\n<!-- END SYSTEM CONTEXT -->"
	assertJSON(t, out.Messages, `[
		{"id":"m1","role":"user","createdAt":1,"content":[{"type":"text","text":`+js(text)+`},{"type":"image_url","image_url":{"detail":"auto","url":"https://cdn/x.png"}}]},
		{"id":"m2","role":"user","content":"plain"}]`)
	assertJSON(t, out.Metadata, `{"messageContentProcessed":2,"userMessagesProcessed":2,"assistantMessagesProcessed":0}`)
	if &out.Messages[1] == &msgs[1] || out.Messages[1]["content"] != "plain" {
		t.Fatal("bad copy-on-write")
	}
}

func TestMessageContentWithoutVision(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"m1","role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"b"}]},
		{"id":"m2","role":"assistant","content":"see","imageList":[{"url":"u1"},{"url":"u2"}]}
	]`)
	out := process(t, processors.NewMessageContent(processors.MessageContentConfig{}), msgs)
	ph := processors.VisionDowngradePlaceholder
	assertJSON(t, out.Messages, `[
		{"id":"m1","role":"user","content":`+js("a\n\nb\n\n"+ph)+`},
		{"id":"m2","role":"assistant","content":`+js("see\n\n"+ph+"\n"+ph)+`,"imageList":[{"url":"u1"},{"url":"u2"}]}]`)
}

func TestMessageContentNativeFiles(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"m","role":"user","content":"sum up",
		"fileList":[{"id":"f1","name":"a.pdf","url":"https://x/a.pdf","fileType":"application/pdf","size":1},
		            {"id":"f2","name":"b.csv","url":"https://x/b.csv","fileType":"text/csv","size":2}]}]`)
	p := processors.NewMessageContent(processors.MessageContentConfig{
		FileContext: &processors.FileContextConfig{Enabled: true, SandboxPathByFileID: map[string]string{"f2": "/sandbox/b.csv"}},
		CanUseFiles: processors.Supported,
	})
	out := process(t, p, msgs)
	content := out.Messages[0]["content"].([]any)
	if len(content) != 3 || dig(content[0], "type") != "file_url" || dig(content[1], "type") != "file_url" || dig(content[2], "type") != "text" {
		t.Fatalf("content = %s", js(content))
	}
	text := dig(content[2], "text").(string)
	if !contains(text, `sandboxPath="/sandbox/b.csv">`) || contains(text, "https://x/b.csv") || contains(text, "a.pdf") {
		t.Fatalf("files_info = %q", text)
	}
}

func TestMessageContentInliner(t *testing.T) {
	msgs := parseMessages(t, `[{"id":"m","role":"user","content":"x","imageList":[{"url":"http://127.0.0.1:3000/a.png"},{"url":"https://cdn/b.png"}]}]`)
	var fetched []string
	p := build(t, processors.NameMessageContent, nil, processors.WithImageInliner(func(_ context.Context, url string) (string, error) {
		fetched = append(fetched, url)
		return "data:image/png;base64,AAAA", nil
	}))
	out := process(t, p, msgs)
	parts := out.Messages[0]["content"].([]any)
	if dig(parts[1], "image_url", "url") != "data:image/png;base64,AAAA" || dig(parts[2], "image_url", "url") != "https://cdn/b.png" {
		t.Fatalf("content = %s", js(parts))
	}
	if len(fetched) != 1 {
		t.Fatalf("fetched %v", fetched)
	}

	// A failing download leaves the message as it was, uncounted.
	failing := processors.NewMessageContent(processors.MessageContentConfig{
		CanUseVision: processors.Supported,
		InlineImage:  func(context.Context, string) (string, error) { return "", errors.New("offline") },
	})
	out = process(t, failing, msgs)
	if out.Messages[0]["content"] != "x" || out.Metadata["userMessagesProcessed"] != 0.0 {
		t.Fatalf("failed inline: %s %v", js(out.Messages[0]), out.Metadata)
	}
}

func TestMessageContentAssistant(t *testing.T) {
	msgs := parseMessages(t, `[
		{"id":"a1","role":"assistant","content":"ans","reasoning":{"content":"why","signature":"sig"}},
		{"id":"a2","role":"assistant","metadata":{"isMultimodal":true},
		 "content":"[{\"type\":\"text\",\"text\":\"hi\",\"thoughtSignature\":\"ts\"},{\"type\":\"image\",\"image\":\"https://i\"},{\"type\":\"audio\"}]"},
		{"id":"a3","role":"assistant","content":"plain"}
	]`)
	out := process(t, build(t, processors.NameMessageContent, nil), msgs)
	assertJSON(t, out.Messages, `[
		{"id":"a1","role":"assistant","reasoning":{"content":"why","signature":"sig"},
		 "content":[{"type":"thinking","thinking":"why","signature":"sig"},{"type":"text","text":"ans"}]},
		{"id":"a2","role":"assistant","metadata":{"isMultimodal":true},
		 "content":[{"type":"text","text":"hi","googleThoughtSignature":"ts"},{"type":"image_url","image_url":{"detail":"auto","url":"https://i"}}]},
		{"id":"a3","role":"assistant","content":"plain"}]`)
	assertJSON(t, out.Metadata, `{"messageContentProcessed":3,"userMessagesProcessed":0,"assistantMessagesProcessed":3}`)
}
