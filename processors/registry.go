package processors

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/convstream/convstream/enginecore"
)

// Registry errors.
var (
	// ErrUnknownProcessor is returned for a name the registry does not know.
	ErrUnknownProcessor = errors.New("unknown processor")
	// ErrDuplicateName is returned when registering a name twice.
	ErrDuplicateName = errors.New("processor name already registered")
)

// Constructor builds a processor from its configuration, a generic JSON
// object (nil when the spec gives none). Configuration problems are
// returned as *FieldError values (possibly joined) so that callers can
// report where they are.
type Constructor func(config map[string]any) (enginecore.Processor, error)

// Registry maps processor names to constructors. It is safe for concurrent
// use. The zero value is not usable; call NewRegistry or Default.
type Registry struct {
	mu    sync.RWMutex
	ctors map[string]Constructor
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{ctors: make(map[string]Constructor)}
}

// Default returns a new registry holding every built-in processor, wired
// with the dependencies given by opts.
func Default(opts ...Option) *Registry {
	var d deps
	for _, opt := range opts {
		opt(&d)
	}
	d.caps = d.caps.withDefaults()
	if d.toolName == nil {
		d.toolName = NewToolNameResolver().Generate
	}
	r := NewRegistry()
	for name, ctor := range d.builtins() {
		r.ctors[name] = ctor
	}
	return r
}

// Register adds a constructor under name.
func (r *Registry) Register(name string, ctor Constructor) error {
	if name == "" || ctor == nil {
		return fmt.Errorf("processors: register %q: empty name or nil constructor", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.ctors[name]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicateName, name)
	}
	r.ctors[name] = ctor
	return nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.ctors))
	for n := range r.ctors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds the processor registered under name from config.
func (r *Registry) New(name string, config map[string]any) (enginecore.Processor, error) {
	r.mu.RLock()
	ctor, ok := r.ctors[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProcessor, name)
	}
	return ctor(config)
}

// Option configures the dependencies that Default gives the built-in
// processors: things a declarative spec cannot carry, such as callbacks.
type Option func(*deps)

// deps are the non-declarative inputs of the built-in processors.
type deps struct {
	caps          Capabilities
	clock         Clock
	variables     map[string]VariableFunc
	toolName      ToolNameFunc
	formatSummary func(string) string
	inlineImage   ImageInliner
}

// WithCapabilities sets the model capability checks used by
// MessageContentProcessor, ToolCallProcessor and ToolSystemRoleProvider.
// Nil checks keep their defaults (see Capabilities).
func WithCapabilities(c Capabilities) Option {
	return func(d *deps) { d.caps = c }
}

// WithClock sets the time source of processors that stamp messages or
// write the date. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(d *deps) { d.clock = now }
}

// WithVariables adds placeholder variable generators for
// PlaceholderVariablesProcessor. They take precedence over static values
// of the same name given in a spec.
func WithVariables(vars map[string]VariableFunc) Option {
	return func(d *deps) { d.variables = vars }
}

// WithToolName sets how ToolCallProcessor names tool calls. The default is
// ToolNameResolver.Generate.
func WithToolName(f ToolNameFunc) Option {
	return func(d *deps) { d.toolName = f }
}

// WithHistorySummaryFormat sets how HistorySummaryProvider wraps the
// summary. The default is the reference's <chat_history_summary> block.
func WithHistorySummaryFormat(f func(summary string) string) Option {
	return func(d *deps) { d.formatSummary = f }
}

// WithImageInliner sets how MessageContentProcessor turns images served by
// a local desktop file server into data URLs. By default they are sent as
// they are.
func WithImageInliner(f ImageInliner) Option {
	return func(d *deps) { d.inlineImage = f }
}
