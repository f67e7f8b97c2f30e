package processors

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/convstream/convstream/enginecore"
)

// VisionDowngradePlaceholder replaces an image for a model without vision,
// so the conversation still shows that an image was there.
const VisionDowngradePlaceholder = "[image omitted: not supported by this model]"

// ImageInliner fetches an image and returns it as a data URL
// (data:MIME;base64,...). MessageContent uses it for images served by a
// desktop app's local file server (host 127.0.0.1), which a model provider
// cannot reach.
type ImageInliner func(ctx context.Context, url string) (dataURL string, err error)

// FileContextConfig controls the <files_info> block describing
// attachments.
type FileContextConfig struct {
	// Enabled adds the block to user messages with attachments.
	Enabled bool `json:"enabled"`
	// IncludeFileURL puts attachment URLs in the block; nil means true.
	IncludeFileURL *bool `json:"includeFileUrl"`
	// OmitFileURLFileIDs are files whose URL must not be given (a failed
	// sandbox sync): they are described by their text only and never sent
	// as native file parts.
	OmitFileURLFileIDs []string `json:"omitFileUrlFileIds"`
	// SandboxPathByFileID maps file ids to their path in the session
	// sandbox; such files are described with that path instead of a URL.
	SandboxPathByFileID map[string]string `json:"sandboxPathByFileId"`
}

// MessageContentConfig configures MessageContent.
type MessageContentConfig struct {
	// FileContext controls the attachments block; nil disables it.
	FileContext *FileContextConfig `json:"fileContext"`
	// Model and Provider are passed to the capability checks.
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// Capability checks; a nil check means "not supported".
	CanUseVision CapabilityFunc `json:"-"`
	CanUseVideo  CapabilityFunc `json:"-"`
	CanUseAudio  CapabilityFunc `json:"-"`
	// CanUseFiles reports native document support: documents are then sent
	// as file_url parts instead of being described in <files_info>.
	CanUseFiles CapabilityFunc `json:"-"`
	// InlineImage turns local desktop image URLs into data URLs; nil sends
	// them unchanged.
	InlineImage ImageInliner `json:"-"`
}

// MessageContent turns user and assistant messages into OpenAI content:
// a plain string, or an array of parts (text, image_url, video_url,
// audio_url, file_url, thinking) built from the message's attachments
// (imageList, videoList, audioList, fileList) and the model's
// capabilities. Images a model cannot see become placeholder text;
// attachments are described in a <files_info> block; stored multimodal
// assistant content and signed reasoning are converted to parts.
//
// Metadata: messageContentProcessed, userMessagesProcessed,
// assistantMessagesProcessed.
type MessageContent struct {
	cfg MessageContentConfig
}

// NewMessageContent returns a MessageContent processor.
func NewMessageContent(cfg MessageContentConfig) *MessageContent {
	return &MessageContent{cfg: cfg}
}

// Name returns "MessageContentProcessor".
func (*MessageContent) Name() string { return NameMessageContent }

// Process converts the message contents.
func (p *MessageContent) Process(ctx context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	caps := contentCaps{
		vision: p.cfg.CanUseVision.check(p.cfg.Model, p.cfg.Provider),
		video:  p.cfg.CanUseVideo.check(p.cfg.Model, p.cfg.Provider),
		audio:  p.cfg.CanUseAudio.check(p.cfg.Model, p.cfg.Provider),
		files:  p.cfg.CanUseFiles.check(p.cfg.Model, p.cfg.Provider),
	}
	next := pc.Derive()
	users, assistants := 0, 0
	var err error
	next.Messages, _, err = mapMessages(ctx, pc.Messages, func(m enginecore.Message) (enginecore.Message, bool) {
		var out enginecore.Message
		var changed, ok bool
		switch m["role"] {
		case "user":
			out, changed, ok = p.userMessage(ctx, m, caps)
			if ok {
				users++
			}
		case "assistant":
			out, changed, ok = p.assistantMessage(ctx, m, caps)
			if ok {
				assistants++
			}
		default:
			return m, false
		}
		return out, changed
	})
	if err != nil {
		return nil, err
	}
	next.Metadata["messageContentProcessed"] = float64(users + assistants)
	next.Metadata["userMessagesProcessed"] = float64(users)
	next.Metadata["assistantMessagesProcessed"] = float64(assistants)
	return next, nil
}

type contentCaps struct{ vision, video, audio, files bool }

// userMessage converts a user message. changed is false when m is
// returned as is; ok is false when the message could not be converted (an
// image without a usable URL), in which case it is kept unchanged and not
// counted, as the reference does on a per-message failure.
func (p *MessageContent) userMessage(ctx context.Context, m enginecore.Message, caps contentCaps) (out enginecore.Message, changed, ok bool) {
	images, videos, audios, files := arr(m["imageList"]), arr(m["videoList"]), arr(m["audioList"]), arr(m["fileList"])
	hasImages, hasVideos, hasAudios, hasFiles := len(images) > 0, len(videos) > 0, len(audios) > 0, len(files) > 0

	native, prompt := p.partitionFiles(files, caps.files)

	parts, _ := m["content"].([]any)
	imageParts := 0
	for _, part := range parts {
		if dig(part, "type") == "image_url" {
			imageParts++
		}
	}
	if !hasImages && !hasVideos && !hasAudios && !hasFiles && (imageParts == 0 || caps.vision) {
		return m, false, true
	}

	text := ""
	switch c := m["content"].(type) {
	case string:
		text = c
	case []any:
		var texts []string
		for _, part := range c {
			if s, ok := dig(part, "text").(string); ok && dig(part, "type") == "text" {
				texts = append(texts, s)
			}
		}
		text = strings.Join(texts, "\n\n")
	}

	if !caps.vision {
		if n := len(images) + imageParts; n > 0 {
			placeholders := strings.Repeat(VisionDowngradePlaceholder+"\n", n)
			placeholders = placeholders[:len(placeholders)-1]
			if text != "" {
				text += "\n\n" + placeholders
			} else {
				text = placeholders
			}
		}
	}

	fc := p.cfg.FileContext
	hasFileContext := (len(prompt) > 0 || hasImages || hasVideos || hasAudios) && fc != nil && fc.Enabled
	if hasFileContext {
		block := filesPrompt(attachments{
			images:    images,
			files:     prompt,
			videos:    videos,
			audios:    audios,
			addURL:    fc.IncludeFileURL == nil || *fc.IncludeFileURL,
			messageID: m["id"],
		})
		if block != "" {
			text = trimJS(text + "\n\n" + block)
		}
	}

	var content []any
	for _, f := range native {
		content = append(content, fileURLPart(obj(f)))
	}
	if text != "" {
		content = append(content, map[string]any{"text": text, "type": "text"})
	}
	if hasImages && caps.vision {
		imgs, ok := p.imageParts(ctx, images)
		if !ok {
			return m, false, false
		}
		content = append(content, imgs...)
	}
	if imageParts > 0 && caps.vision {
		for _, part := range parts {
			if dig(part, "type") == "image_url" {
				content = append(content, part)
			}
		}
	}
	if hasVideos && caps.video {
		for _, v := range videos {
			content = append(content, map[string]any{"type": "video_url", "video_url": pick(obj(v), "url")})
		}
	}
	if hasAudios && caps.audio {
		for _, a := range audios {
			content = append(content, map[string]any{"audio_url": pick(obj(a), "url"), "type": "audio_url"})
		}
	}

	out = enginecore.Message{"role": m["role"]}
	for _, k := range [...]string{"createdAt", "id", "meta", "updatedAt"} {
		copyField(out, m, k)
	}
	for _, k := range [...]string{"tools", "tool_calls", "tool_call_id", "name"} {
		copyTruthy(out, m, k)
	}
	richContent := hasFileContext ||
		(hasImages || imageParts > 0) && caps.vision ||
		hasVideos && caps.video || hasAudios && caps.audio || len(native) > 0
	if len(content) == 1 && dig(content[0], "type") == "text" && !richContent {
		out["content"] = dig(content[0], "text")
	} else {
		if content == nil {
			content = []any{}
		}
		out["content"] = content
	}
	return out, true, true
}

// partitionFiles splits attachments into native file parts and entries of
// the <files_info> block. Sandbox-synced files are always described (with
// their sandbox path) and also sent natively when possible; files whose URL
// must be omitted are only described.
func (p *MessageContent) partitionFiles(files []any, canUseFiles bool) (native, prompt []any) {
	var sandbox map[string]string
	var omit []string
	if fc := p.cfg.FileContext; fc != nil {
		sandbox, omit = fc.SandboxPathByFileID, fc.OmitFileURLFileIDs
	}
	for _, f := range files {
		file := obj(f)
		id := ""
		if v := file["id"]; truthy(v) {
			id = jsString(v)
		}
		omitted := id != "" && slices.Contains(omit, id)
		switch path := sandbox[id]; {
		case id != "" && path != "":
			entry := maps.Clone(file)
			entry["sandboxPath"] = path
			prompt = append(prompt, entry)
			if canUseFiles && !omitted {
				native = append(native, f)
			}
		case omitted:
			entry := maps.Clone(file)
			entry["omitUrl"] = true
			prompt = append(prompt, entry)
		case canUseFiles:
			native = append(native, f)
		default:
			prompt = append(prompt, f)
		}
	}
	return native, prompt
}

func fileURLPart(file map[string]any) map[string]any {
	fu := make(map[string]any, 6)
	copyField(fu, file, "content")
	if v, ok := file["id"]; ok {
		fu["fileId"] = v
	}
	if v, ok := file["fileType"]; ok {
		fu["mimeType"] = v
	}
	copyField(fu, file, "name")
	copyField(fu, file, "size")
	copyField(fu, file, "url")
	return map[string]any{"file_url": fu, "type": "file_url"}
}

// imageParts turns an imageList into image_url parts, inlining local
// desktop images. ok is false when an image has no usable URL or cannot be
// inlined.
func (p *MessageContent) imageParts(ctx context.Context, images []any) ([]any, bool) {
	out := make([]any, 0, len(images))
	for _, img := range images {
		u, ok := dig(img, "url").(string)
		if !ok {
			return nil, false
		}
		if p.cfg.InlineImage != nil && isLocalDesktopURL(u) {
			data, err := p.cfg.InlineImage(ctx, u)
			if err != nil {
				return nil, false
			}
			u = data
		}
		out = append(out, map[string]any{"image_url": map[string]any{"detail": "auto", "url": u}, "type": "image_url"})
	}
	return out, true
}

// isLocalDesktopURL reports whether u is an absolute URL (not a base64 data
// URI) on host 127.0.0.1, where the desktop app serves local files.
func isLocalDesktopURL(u string) bool {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if i := strings.Index(rest, ";base64,"); i > 0 && len(rest) > i+len(";base64,") {
			return false
		}
	}
	parsed, err := url.Parse(u)
	return err == nil && parsed.Scheme != "" && parsed.Hostname() == "127.0.0.1"
}

// assistantMessage converts an assistant message: signed reasoning becomes
// a thinking part; stored multimodal content and reasoning are decoded;
// legacy images become image parts or placeholders.
func (p *MessageContent) assistantMessage(ctx context.Context, m enginecore.Message, caps contentCaps) (out enginecore.Message, changed, ok bool) {
	reasoning := obj(m["reasoning"])
	if truthy(m["reasoning"]) && truthy(dig(reasoning, "signature")) {
		thinking := map[string]any{"signature": reasoning["signature"], "type": "thinking"}
		if v, ok := reasoning["content"]; ok {
			thinking["thinking"] = v
		}
		text := map[string]any{"type": "text"}
		if v, ok := m["content"]; ok {
			text["text"] = v
		}
		out = maps.Clone(m)
		out["content"] = []any{thinking, text}
		return out, true, true
	}

	multimodalContent := truthy(dig(m, "metadata", "isMultimodal")) && truthy(m["content"])
	if truthy(dig(reasoning, "isMultimodal")) && truthy(reasoning["content"]) {
		if parts := decodeParts(reasoning["content"]); parts != nil {
			lines := make([]string, len(parts))
			for i, part := range parts {
				switch dig(part, "type") {
				case "text":
					if v := dig(part, "text"); v != nil {
						lines[i] = jsString(v)
					}
				case "image":
					lines[i] = "[Image: " + textOf(obj(part), "image") + "]"
				}
			}
			r := maps.Clone(reasoning)
			r["content"] = strings.Join(lines, "\n")
			r["isMultimodal"] = false
			out = maps.Clone(m)
			out["reasoning"] = r
			if multimodalContent {
				if cparts := decodeParts(m["content"]); cparts != nil {
					out["content"] = convertParts(cparts, caps.vision)
				}
			}
			return out, true, true
		}
	}

	if multimodalContent {
		if parts := decodeParts(m["content"]); parts != nil {
			out = maps.Clone(m)
			out["content"] = convertParts(parts, caps.vision)
			return out, true, true
		}
	}

	images := arr(m["imageList"])
	if len(images) == 0 {
		return m, false, true
	}
	out = maps.Clone(m)
	if caps.vision {
		var content []any
		if c := m["content"]; truthy(c) {
			content = append(content, map[string]any{"text": c, "type": "text"})
		}
		imgs, ok := p.imageParts(ctx, images)
		if !ok {
			return m, false, false
		}
		out["content"] = append(content, imgs...)
		return out, true, true
	}
	placeholders := strings.TrimSuffix(strings.Repeat(VisionDowngradePlaceholder+"\n", len(images)), "\n")
	if c := m["content"]; truthy(c) {
		out["content"] = jsString(c) + "\n\n" + placeholders
	} else {
		out["content"] = placeholders
	}
	return out, true, true
}

// decodeParts parses stored multimodal content: a JSON array whose first
// element has a type. It returns nil for anything else.
func decodeParts(content any) []any {
	s, ok := content.(string)
	if !ok {
		s = jsString(content)
	}
	var parts []any
	if json.Unmarshal([]byte(s), &parts) != nil || len(parts) == 0 || !truthy(dig(parts[0], "type")) {
		return nil
	}
	return parts
}

// convertParts turns stored parts ({type: text|image}) into OpenAI parts;
// without vision an image becomes placeholder text.
func convertParts(parts []any, vision bool) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		part := obj(p)
		var conv map[string]any
		switch part["type"] {
		case "text":
			conv = map[string]any{"type": "text"}
			copyField(conv, part, "text")
		case "image":
			if vision {
				img := map[string]any{"detail": "auto"}
				if v, ok := part["image"]; ok {
					img["url"] = v
				}
				conv = map[string]any{"image_url": img, "type": "image_url"}
			} else {
				conv = map[string]any{"text": VisionDowngradePlaceholder, "type": "text"}
			}
		default:
			continue
		}
		if v, ok := part["thoughtSignature"]; ok {
			conv["googleThoughtSignature"] = v
		}
		out = append(out, conv)
	}
	return out
}

func (d deps) messageContent(raw map[string]any) (enginecore.Processor, error) {
	var cfg MessageContentConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.CanUseVision = d.caps.Vision
	cfg.CanUseVideo = d.caps.Video
	cfg.CanUseAudio = d.caps.Audio
	cfg.CanUseFiles = d.caps.Files
	cfg.InlineImage = d.inlineImage
	return NewMessageContent(cfg), nil
}
