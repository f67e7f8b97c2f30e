package processors

// CapabilityFunc reports whether a model served by a provider supports a
// feature (function calling, vision, ...).
type CapabilityFunc func(model, provider string) bool

// Supported is a CapabilityFunc that always answers yes.
func Supported(string, string) bool { return true }

// Unsupported is a CapabilityFunc that always answers no.
func Unsupported(string, string) bool { return false }

// Capabilities groups the model capability checks used by the built-in
// processors. A nil check takes the default of the reference's standard
// pipeline: function calling and vision supported; video, audio and native
// file parts not.
type Capabilities struct {
	FunctionCalling CapabilityFunc
	Vision          CapabilityFunc
	Video           CapabilityFunc
	Audio           CapabilityFunc
	Files           CapabilityFunc
}

// withDefaults fills nil checks with the standard pipeline's defaults.
func (c Capabilities) withDefaults() Capabilities {
	if c.FunctionCalling == nil {
		c.FunctionCalling = Supported
	}
	if c.Vision == nil {
		c.Vision = Supported
	}
	if c.Video == nil {
		c.Video = Unsupported
	}
	if c.Audio == nil {
		c.Audio = Unsupported
	}
	if c.Files == nil {
		c.Files = Unsupported
	}
	return c
}

// check calls f, treating a nil check as "not supported".
func (f CapabilityFunc) check(model, provider string) bool {
	return f != nil && f(model, provider)
}
