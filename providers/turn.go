package providers

// A turn is one message of a normalised conversation: what every format
// is written from.
type turn struct {
	// role is system, developer, user, assistant or tool.
	role string
	// parts is the content: text and images, in order.
	parts []part
	// calls are an assistant turn's tool calls.
	calls []toolCall
	// callID and name identify a tool turn's call.
	callID, name string
	// thinking are an assistant turn's thinking parts (Anthropic's
	// thinking and redacted_thinking blocks), sent back only to Anthropic.
	thinking []map[string]any
	// fields are the provider fields the reply kept
	// (reasoning.providerFields).
	fields providerFields
}

// providerFields are an assistant message's reasoning.providerFields.
type providerFields struct {
	provider, model  string
	thoughtSignature string
	thinking         []map[string]any
	reasoningItems   []map[string]any
}

// A part is one piece of content.
type part struct {
	text string
	// image is the URL of an image (http(s) or a data: URL); "" for text.
	image string
}

// A toolCall is one function call an assistant made.
type toolCall struct {
	// id is the id the request carries (sanitised and unique); orig the
	// id in the pipeline's output.
	id, orig, name string
	// signature is the call's Gemini thoughtSignature, when one was kept.
	signature string
	// arguments is the call's arguments as JSON text, as the model wrote
	// them (they may not be valid JSON).
	arguments string
}

// text returns the turn's text parts joined, images left out.
func (t turn) text() string {
	if len(t.parts) == 1 && t.parts[0].image == "" {
		return t.parts[0].text
	}
	var s string
	for _, p := range t.parts {
		if p.image != "" || p.text == "" {
			continue
		}
		if s != "" {
			s += "\n\n"
		}
		s += p.text
	}
	return s
}

// hasImages reports whether any part is an image.
func (t turn) hasImages() bool {
	for _, p := range t.parts {
		if p.image != "" {
			return true
		}
	}
	return false
}
