package providers

import (
	"fmt"
	"strconv"
	"strings"
)

// A Profile says what the model a request is for accepts, so that Build
// writes a request today's models take: from the model's name (auto), or
// by explicit switches. The zero Profile is a model Build does not know,
// for which every switch takes the choice that every current model of the
// format accepts. docs/events.md, "Formats", has the table of what each
// provider and model family accepts.
type Profile struct {
	// Model is the model's id as the provider names it
	// (claude-sonnet-4-6, gemini-3-pro-preview, gpt-5.1), optionally
	// after "provider:" or "provider/"; "" is a model Build does not know.
	Model string `json:"model,omitempty"`
	// Prefill decides a context that ends with the model's own words.
	Prefill Prefill `json:"prefill,omitempty"`
	// Signatures decides which provider fields (thought signatures,
	// thinking blocks, reasoning items) are sent back.
	Signatures Signatures `json:"signatures,omitempty"`
	// FunctionTurns decides where Gemini function responses go.
	FunctionTurns FunctionTurns `json:"functionTurns,omitempty"`
	// AssistantImages decides whether images in the model's turns stay
	// images.
	AssistantImages AssistantImages `json:"assistantImages,omitempty"`
}

// Prefill decides an anthropic.messages or gemini request whose context
// ends with the assistant's turn, which those APIs read as a prefill: the
// start of the reply the model must continue.
type Prefill string

// The Prefill choices.
const (
	// PrefillAuto keeps a prefill for models known to accept one (Claude
	// before 4.6, Gemini before 3) and drops it otherwise.
	PrefillAuto Prefill = "auto"
	// PrefillKeep ends the request with the assistant's turn.
	PrefillKeep Prefill = "keep"
	// PrefillDrop ends the request with a user turn, ContinueReply: the
	// assistant's words stay in the context and the model is asked to go
	// on from them. Claude from 4.6 answers a prefill with 400 ("Prefill
	// removal", platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-6),
	// as any Claude does with extended thinking on.
	PrefillDrop Prefill = "drop"
)

// ContinueReply is the user turn that ends a request whose context ends
// with the assistant's words, where the profile drops prefills.
const ContinueReply = "(Continue your last reply from where it stopped.)"

// Signatures decides which provider fields Build sends back (see
// fields.go).
type Signatures string

// The Signatures choices.
const (
	// SignaturesAuto sends back every field kept for the request's
	// provider, and SkipThoughtSignature for a Gemini function call of the
	// current turn that has none (Gemini 3 answers 400 without it).
	SignaturesAuto Signatures = "auto"
	// SignaturesKeep sends back the fields kept, no fallback.
	SignaturesKeep Signatures = "keep"
	// SignaturesDrop sends none.
	SignaturesDrop Signatures = "drop"
)

// FunctionTurns decides a gemini request's function responses.
type FunctionTurns string

// The FunctionTurns choices.
const (
	// FunctionTurnsAuto is FunctionTurnsSeparate.
	FunctionTurnsAuto FunctionTurns = "auto"
	// FunctionTurnsSeparate puts a model call's function responses in a
	// user content of their own, one response for each call; user text
	// that follows them gets its own content after a model content
	// ToolResultsRead, since contents alternate. Vertex AI answers 400
	// ("the number of function response parts is equal to the number of
	// function call parts") to responses merged with other parts.
	FunctionTurnsSeparate FunctionTurns = "separate"
	// FunctionTurnsMerged merges function responses with the user's next
	// text into one content.
	FunctionTurnsMerged FunctionTurns = "merged"
)

// ToolResultsRead is the model content a gemini request puts between a
// call's function responses and the user's next text when function turns
// are separate.
const ToolResultsRead = "(Tool results received.)"

// AssistantImages decides images in the assistant's turns.
type AssistantImages string

// The AssistantImages choices.
const (
	// AssistantImagesAuto writes notes for Anthropic and keeps images for
	// Gemini.
	AssistantImagesAuto AssistantImages = "auto"
	// AssistantImagesKeep keeps them as images where the format can say
	// so (anthropic.messages, gemini).
	AssistantImagesKeep AssistantImages = "keep"
	// AssistantImagesNote writes a note "[image: URL]" instead. Claude
	// takes image blocks only in user turns ("image content blocks are
	// only supported in user messages").
	AssistantImagesNote AssistantImages = "note"
)

// Check reports what is wrong with p.
func (p Profile) Check() error {
	check := func(name, v string, allowed ...string) error {
		if v == "" {
			return nil
		}
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("profile.%s: %q is not one of %v", name, v, allowed)
	}
	for _, err := range []error{
		check("prefill", string(p.Prefill), "auto", "keep", "drop"),
		check("signatures", string(p.Signatures), "auto", "keep", "drop"),
		check("functionTurns", string(p.FunctionTurns), "auto", "separate", "merged"),
		check("assistantImages", string(p.AssistantImages), "auto", "keep", "note"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// rules are a Profile's decisions for one format.
type rules struct {
	format Format
	// prefill: a final assistant turn may stay.
	prefill bool
	// signatures: kept fields are sent back; fallback: and
	// SkipThoughtSignature where none was kept.
	signatures, fallback bool
	// separateFunctions: Gemini function responses get their own content.
	separateFunctions bool
	// assistantImages: images stay images in assistant turns.
	assistantImages bool
	// model is the model's id without a provider prefix.
	model string
}

// rulesFor decides p for format f.
func (p Profile) rulesFor(f Format) rules {
	fam := family(p.Model)
	r := rules{format: f, model: fam.id}
	switch p.Prefill {
	case PrefillKeep:
		r.prefill = true
	case PrefillDrop:
	default:
		switch fam.name {
		case "claude":
			r.prefill = fam.before(4, 6)
		case "gemini":
			r.prefill = fam.before(3, 0)
		}
	}
	switch p.Signatures {
	case SignaturesDrop:
	case SignaturesKeep:
		r.signatures = true
	default:
		r.signatures, r.fallback = true, true
	}
	r.separateFunctions = p.FunctionTurns != FunctionTurnsMerged
	switch p.AssistantImages {
	case AssistantImagesKeep:
		r.assistantImages = true
	case AssistantImagesNote:
	default:
		r.assistantImages = f != FormatAnthropic
	}
	return r
}

// A modelFamily is what a model's name says: claude-sonnet-4-6 is claude
// 4.6, gemini-2.5-flash gemini 2.5.
type modelFamily struct {
	id           string
	name         string // claude, gemini, or "" for another or no model
	major, minor int
}

// before reports whether the family's version is known and below
// major.minor; an unknown version is taken as the newest.
func (m modelFamily) before(major, minor int) bool {
	if m.major == 0 {
		return false
	}
	return m.major < major || m.major == major && m.minor < minor
}

// family reads a model id: the name before its first version number
// (claude, gemini), then the version, whether it comes first
// (claude-3-5-sonnet) or after the tier (claude-sonnet-4-5-20250929,
// gemini-2.5-pro).
func family(model string) modelFamily {
	id := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexAny(id, ":/"); i >= 0 {
		id = id[i+1:]
	}
	m := modelFamily{id: id}
	switch {
	case strings.HasPrefix(id, "claude"):
		m.name = "claude"
	case strings.HasPrefix(id, "gemini"):
		m.name = "gemini"
	default:
		return m
	}
	fields := strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '.' || r == '@' })
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || len(f) > 2 {
			continue
		}
		m.major = n
		if i+1 < len(fields) {
			if n2, err := strconv.Atoi(fields[i+1]); err == nil && len(fields[i+1]) <= 2 {
				m.minor = n2
			}
		}
		break
	}
	return m
}
