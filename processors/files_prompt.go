package processors

import (
	"strconv"
	"strings"
)

// The <files_info> block tells the model about a user message's
// attachments. Images, videos and audios get a stable reference
// (msg_HASH.image_1) that tools can use to point back at them.

const (
	systemContextStart = "<!-- SYSTEM CONTEXT (NOT PART OF USER QUERY) -->"
	systemContextEnd   = "<!-- END SYSTEM CONTEXT -->"
	contextInstruction = "<context.instruction>following part contains context information injected by the system. Please follow these instructions:\n\n" +
		"1. Always prioritize handling user-visible content.\n" +
		"2. the context is only required when user's queries rely on it.\n" +
		"</context.instruction>"
)

type attachments struct {
	images, files, videos, audios []any
	addURL                        bool
	messageID                     any // the message's id; absent or empty gives local refs
}

// filesPrompt renders the attachments block, or "" when there are none.
func filesPrompt(a attachments) string {
	if len(a.images) == 0 && len(a.files) == 0 && len(a.videos) == 0 && len(a.audios) == 0 {
		return ""
	}
	var sections []string
	if len(a.images) > 0 {
		sections = append(sections, visualPrompt("image", a.images, a.addURL, a.messageID))
	}
	if len(a.files) > 0 {
		sections = append(sections, filePrompt(a.files, a.addURL))
	}
	if len(a.videos) > 0 {
		sections = append(sections, visualPrompt("video", a.videos, a.addURL, a.messageID))
	}
	if len(a.audios) > 0 {
		sections = append(sections, visualPrompt("audio", a.audios, a.addURL, a.messageID))
	}
	return trimJS(systemContextStart + "\n" + contextInstruction + "\n<files_info>\n" +
		strings.Join(sections, "\n") + "\n</files_info>\n" + systemContextEnd)
}

// visualPrompt renders an <images>, <videos> or <audios> section.
func visualPrompt(kind string, items []any, addURL bool, messageID any) string {
	var b strings.Builder
	b.WriteString("<" + kind + "s>\n<" + kind + "s_docstring>here are user upload " + kind + "s you can refer to</" + kind + "s_docstring>\n")
	for i, it := range items {
		item := obj(it)
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("<" + kind + ` ref="` + visualRef(kind, i, messageID) + `" name="` + textOf(item, "alt") + `"`)
		if addURL {
			b.WriteString(` url="` + textOf(item, "url") + `"`)
		}
		b.WriteString("></" + kind + ">")
	}
	b.WriteString("\n</" + kind + "s>")
	return trimJS(b.String())
}

// visualRef is KIND_N, prefixed with msg_HASH. when the message has an id.
func visualRef(kind string, index int, messageID any) string {
	local := kind + "_" + strconv.Itoa(index+1)
	if !truthy(messageID) {
		return local
	}
	return "msg_" + hashMessageID(jsString(messageID)) + "." + local
}

// hashMessageID is a 32-bit FNV-1a over the id's UTF-16 code units (one
// per code point, its first unit), rendered in base 36 and cut to 6
// characters.
func hashMessageID(id string) string {
	hash := uint32(2166136261)
	for _, r := range id {
		unit := uint32(r)
		if r >= 0x10000 {
			unit = uint32(0xd800 + ((r - 0x10000) >> 10))
		}
		hash ^= unit
		hash *= 16777619
	}
	s := strconv.FormatUint(uint64(hash), 36)
	if len(s) > 6 {
		s = s[:6]
	}
	return s
}

// filePrompt renders the <files> section. Files synced into the sandbox
// show their sandbox path and never the internal URL.
func filePrompt(files []any, addURL bool) string {
	docstring := "here are user upload files you can refer to"
	for _, f := range files {
		if truthy(dig(f, "sandboxPath")) {
			docstring = "here are user upload files you can refer to. Files with a sandboxPath attribute are available in the sandbox and can be read with sandbox tools (e.g. readFile)."
			break
		}
	}
	var b strings.Builder
	b.WriteString("<files>\n<files_docstring>" + docstring + "</files_docstring>\n")
	for i, f := range files {
		item := obj(f)
		if i > 0 {
			b.WriteByte('\n')
		}
		content := ""
		if v := item["content"]; truthy(v) {
			content = jsString(v)
		}
		b.WriteString(`<file id="` + textOf(item, "id") + `" name="` + textOf(item, "name") + `" type="` + textOf(item, "fileType") + `" size="` + textOf(item, "size") + `"`)
		switch {
		case truthy(item["sandboxPath"]):
			b.WriteString(` sandboxPath="` + textOf(item, "sandboxPath") + `"`)
		case addURL && !truthy(item["omitUrl"]):
			b.WriteString(` url="` + textOf(item, "url") + `"`)
		}
		b.WriteString(">" + content + "</file>")
	}
	b.WriteString("\n</files>")
	return trimJS(b.String())
}
