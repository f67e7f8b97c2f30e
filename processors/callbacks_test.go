package processors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
)

// The recorded calls whose processor config held callbacks ("[fn]") are
// replayed here with Go callbacks written after the reference test named
// in each record.

// decodeInto fills an exported config struct from a recorded config,
// leaving out the callbacks.
func decodeInto(t *testing.T, cfg map[string]any, dst any) {
	t.Helper()
	plain := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if v != "[fn]" {
			plain[k] = v
		}
	}
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func capability(ok bool) processors.CapabilityFunc {
	return func(string, string) bool { return ok }
}

// contentCaps are the values the reference's mocked capability checks
// returned in each MessageContent test (its mocks keep their value from
// one test to the next).
type contentCaps struct{ vision, video, audio, files bool }

var messageContentCaps = map[string]contentCaps{
	"should downgrade image to placeholder text if model cannot use vision":                              {},
	"should process images if model can use vision":                                                      {vision: true},
	"should handle vision disabled scenario correctly":                                                   {},
	"should downgrade multiple images into separate placeholder lines":                                   {},
	"should downgrade image_url parts in pre-existing array content when vision is disabled":             {},
	"should preserve image_url parts in pre-existing array content when vision is supported":             {vision: true},
	"should process local image URLs to base64":                                                          {vision: true},
	"should handle assistant message with imageList and content":                                         {vision: true},
	"should handle assistant message with imageList but no content":                                      {vision: true},
	"should add file context when enabled":                                                               {},
	"should omit file URLs when includeFileUrl is disabled":                                              {},
	"should not add file context when disabled":                                                          {},
	"should not stringify array content when concatenating file context":                                 {},
	"should emit a file_url part before the text and skip the files_info entry":                          {files: true},
	"should keep the legacy text injection byte-identical when files are not supported":                  {},
	"should keep images on the vision path while documents go native":                                    {vision: true, files: true},
	"should emit only the file_url part when the message has no text":                                    {files: true},
	"should carry an undefined content field when the document was not parsed":                           {files: true},
	"should inject sandboxPath into files_info and omit the internal url":                                {},
	"should deliver sandbox-synced files natively and on files_info when native file input is available": {files: true},
	"should keep sandbox-synced files off native delivery when they are marked omitFileUrl":              {files: true},
	"should keep under-limit native files as file_url while sandbox-synced files are also on files_info": {files: true},
	"should omit the url for selected-but-failed sandbox files (all failed)":                             {},
	"should mix sandboxPath success with URL-free fallback on partial failure":                           {},
	"should leave native file_url delivery unchanged when sandbox is not enabled":                        {files: true},
	"should handle assistant messages with reasoning correctly":                                          {},
	"should update processing metadata correctly":                                                        {},
	"should return empty video content parts if model cannot use video":                                  {},
	"should process videos if model can use video":                                                       {video: true},
	"should handle video disabled scenario correctly":                                                    {},
	"should include videos in file context when enabled":                                                 {},
	"should handle mixed images and videos correctly":                                                    {vision: true, video: true},
	"should return plain text if model cannot use audio":                                                 {vision: true, video: true},
	"should process audios as audio_url parts if model can use audio":                                    {vision: true, video: true, audio: true},
	"should include audios in file context when enabled even if audio not supported":                     {vision: true, video: true},
	"should convert assistant message with metadata.isMultimodal to OpenAI format":                       {vision: true, video: true},
	"should convert assistant message with reasoning.isMultimodal to plain text":                         {vision: true, video: true},
	"should handle both reasoning.isMultimodal and metadata.isMultimodal":                                {vision: true, video: true},
	"should prioritize reasoning.signature over reasoning.isMultimodal":                                  {vision: true, video: true},
	"should handle plain text when isMultimodal is true but content is not valid JSON":                   {vision: true, video: true},
	"should preserve thoughtSignature in multimodal content parts":                                       {vision: true, video: true},
	"should downgrade assistant multimodal image parts to placeholder text when vision is disabled":      {video: true},
	"should downgrade assistant legacy imageList to placeholder text when vision is disabled":            {video: true},
}

func buildMessageContent(t *testing.T, r record) enginecore.Processor {
	name := r.Test[strings.LastIndex(r.Test, " > ")+3:]
	caps, ok := messageContentCaps[name]
	if !ok {
		t.Fatalf("no capabilities known for %q", name)
	}
	var cfg processors.MessageContentConfig
	decodeInto(t, r.State.Config, &cfg)
	// A check absent from the recorded config is absent in Go too (nil
	// means unsupported).
	has := func(key string) bool { return r.State.Config[key] == "[fn]" }
	if has("isCanUseVision") {
		cfg.CanUseVision = capability(caps.vision)
	}
	if has("isCanUseVideo") {
		cfg.CanUseVideo = capability(caps.video)
	}
	if has("isCanUseAudio") {
		cfg.CanUseAudio = capability(caps.audio)
	}
	if has("isCanUseFiles") {
		cfg.CanUseFiles = capability(caps.files)
	}
	// The reference test mocks the download of local desktop images.
	cfg.InlineImage = func(context.Context, string) (string, error) {
		return "data:image/png;base64,base64-data", nil
	}
	return processors.NewMessageContent(cfg)
}

func constant(s string) processors.VariableFunc {
	return func() (string, error) { return s, nil }
}

func placeholderGenerators(t *testing.T, r record) map[string]processors.VariableFunc {
	switch {
	case strings.Contains(r.Test, "errors gracefully"), strings.Contains(r.Test, "generator throws"):
		return map[string]processors.VariableFunc{
			"error":   func() (string, error) { return "", errors.New("Generator error") },
			"working": constant("works"),
		}
	case strings.Contains(r.Test, "tool message substitution"):
		if strings.Contains(r.Test, "empty string") {
			return map[string]processors.VariableFunc{"agent_id": constant("")}
		}
		return map[string]processors.VariableFunc{
			"agent_id":    constant("agt_xyz"),
			"agent_title": constant("Test Agent"),
			"topic_id":    constant("tpc_abc"),
		}
	}
	return map[string]processors.VariableFunc{
		"date":     constant("2023-12-25"),
		"time":     constant("14:30:45"),
		"username": constant("TestUser"),
		"random":   constant("12345"),
		"nested":   constant("Value with {{date}} inside"),
	}
}

func buildCallbackProcessor(t *testing.T, r record) enginecore.Processor {
	clock := r.clock(t)
	switch r.Processor {
	case processors.NameMessageContent:
		return buildMessageContent(t, r)
	case processors.NamePlaceholderVariables:
		var cfg processors.PlaceholderVariablesConfig
		decodeInto(t, r.State.Config, &cfg)
		cfg.Values = nil
		cfg.Generators = placeholderGenerators(t, r)
		p, err := processors.NewPlaceholderVariables(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	case processors.NameToolSystemRole:
		var cfg processors.ToolSystemRoleConfig
		decodeInto(t, r.State.Config, &cfg)
		cfg.CanUseFunctionCalling = capability(!strings.Contains(r.Test, "function calling is not supported"))
		cfg.Clock = clock
		return processors.NewToolSystemRoleProvider(cfg)
	case processors.NameGroupRoleTransform:
		var cfg processors.GroupRoleTransformConfig
		decodeInto(t, r.State.Config, &cfg)
		cfg.ToolName = func(identifier, apiName string) string { return "custom_" + identifier + "_" + apiName }
		return processors.NewGroupRoleTransform(cfg)
	case processors.NameHistorySummary:
		var cfg processors.HistorySummaryConfig
		decodeInto(t, r.State.Config, &cfg)
		cfg.Format = func(summary string) string { return "## History\n" + summary }
		cfg.Clock = clock
		return processors.NewHistorySummaryProvider(cfg)
	}
	t.Fatalf("no Go reproduction for callbacks of %s", r.Processor)
	return nil
}

func TestConformanceCallbacks(t *testing.T) {
	for _, r := range loadRecords(t) {
		if !r.ConfigHasCallbacks {
			continue
		}
		callbackTotal.Add(1)
		name := fmt.Sprintf("%03d/%s/%s", r.line, r.Processor, strings.ReplaceAll(r.Test, " ", "_"))
		t.Run(name, func(t *testing.T) {
			if err := r.run(buildCallbackProcessor(t, r)); err != nil {
				t.Fatalf("%s\n%v", r.Test, err)
			}
			callbackPassed.Add(1)
		})
	}
}
