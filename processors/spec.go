package processors

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/internal/jsvalue"
)

// ErrInvalidSpec is matched (errors.Is) by every pipeline spec error.
var ErrInvalidSpec = errors.New("invalid pipeline spec")

// Spec declares a pipeline: processor names in order, each with its
// configuration. It is written in YAML or JSON:
//
//	name: default
//	processors:
//	  - name: HistoryTruncateProcessor
//	    config:
//	      enableHistoryCount: true
//	      historyCount: 20
//	  - MessageCleanupProcessor   # shorthand for an entry without config
//	limits:                       # optional: tighten the engine's limits
//	  maxExpansionBytes: 1048576
//	  maxExpansionDepth: 4
type Spec struct {
	// Name identifies the spec in logs and errors.
	Name string `json:"name,omitempty"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Processors are the steps, in order.
	Processors []ProcessorSpec `json:"processors"`
	// Limits bound every run of the pipeline (see enginecore.Limits). They
	// only tighten what the engine is given otherwise (the worker's
	// settings): the smaller value wins. Zero fields leave it as it is.
	Limits enginecore.Limits `json:"limits,omitzero"`
}

// ProcessorSpec is one step of a Spec.
type ProcessorSpec struct {
	// Name is the registered processor name.
	Name string `json:"name"`
	// Config is the processor's configuration as a generic JSON object.
	Config map[string]any `json:"config,omitempty"`
}

// SpecError locates a problem in a spec, for example
// "processors[3].config.historyCount: must be an integer, got string".
type SpecError struct {
	Path string
	Err  error
}

// Error returns "PATH: ERR".
func (e *SpecError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *SpecError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidSpec) true.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

//go:embed specs/default.yaml
var defaultSpec []byte

// DefaultSpec returns a fresh copy of the built-in "default" spec: the
// reference's standard message pipeline, in its order, restricted to the
// processors this package implements. Callers may change the copy, for
// example with Configure, before building it.
func DefaultSpec() *Spec {
	s, err := ParseSpec(defaultSpec)
	if err != nil {
		panic("processors: embedded default spec: " + err.Error()) // caught by tests
	}
	return s
}

//go:embed specs/messages-engine.yaml
var messagesEngineSpec []byte

// MessagesEngineSpec returns a fresh copy of the built-in "messages-engine"
// spec: the default spec with the processors the newer upstream
// MessagesEngine adds (placeholder filter, historical web search filter,
// activation and stale tool result trims), in upstream's order.
func MessagesEngineSpec() *Spec {
	s, err := ParseSpec(messagesEngineSpec)
	if err != nil {
		panic("processors: embedded messages-engine spec: " + err.Error()) // caught by tests
	}
	return s
}

// BuiltinSpec returns a fresh copy of the built-in spec called name
// ("default" or "messages-engine"), or false when there is none.
func BuiltinSpec(name string) (*Spec, bool) {
	switch name {
	case "default":
		return DefaultSpec(), true
	case "messages-engine":
		return MessagesEngineSpec(), true
	}
	return nil, false
}

// LoadSpec reads a spec from a YAML or JSON file.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("processors: load spec: %w", err)
	}
	s, err := ParseSpec(data)
	if err != nil {
		return nil, fmt.Errorf("processors: load spec %s: %w", path, err)
	}
	return s, nil
}

// ParseSpec parses a spec written in YAML or JSON.
func ParseSpec(data []byte) (*Spec, error) {
	var doc any
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, &SpecError{Path: "spec", Err: err}
		}
	} else if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &SpecError{Path: "spec", Err: err}
	}
	doc, err := normalizeYAML(doc, "")
	if err != nil {
		return nil, err
	}
	return specFromDoc(doc)
}

func specFromDoc(doc any) (*Spec, error) {
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, &SpecError{Path: "spec", Err: fmt.Errorf("must be an object, got %s", jsvalue.TypeName(doc))}
	}
	var errs []error
	s := &Spec{}
	for _, k := range sortedKeys(top) {
		v := top[k]
		switch k {
		case "name", "description":
			text, ok := v.(string)
			if !ok && v != nil {
				errs = append(errs, &SpecError{Path: k, Err: fmt.Errorf("must be a string, got %s", jsvalue.TypeName(v))})
			}
			if k == "name" {
				s.Name = text
			} else {
				s.Description = text
			}
		case "processors":
			items, ok := v.([]any)
			if !ok {
				errs = append(errs, &SpecError{Path: k, Err: fmt.Errorf("must be an array, got %s", jsvalue.TypeName(v))})
				continue
			}
			for i, item := range items {
				ps, err := processorFromDoc(item, "processors["+strconv.Itoa(i)+"]")
				if err != nil {
					errs = append(errs, err)
				}
				s.Processors = append(s.Processors, ps)
			}
		case "limits":
			if err := limitsFromDoc(v, &s.Limits); err != nil {
				errs = append(errs, err)
			}
		default:
			errs = append(errs, &SpecError{Path: k, Err: errors.New("unknown field")})
		}
	}
	if _, ok := top["processors"]; !ok {
		errs = append(errs, &SpecError{Path: "processors", Err: errors.New("missing")})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// limitsFromDoc reads a spec's limits: positive integers.
func limitsFromDoc(v any, dst *enginecore.Limits) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return &SpecError{Path: "limits", Err: fmt.Errorf("must be an object, got %s", jsvalue.TypeName(v))}
	}
	var errs []error
	if err := decodeConfig(m, dst); err != nil {
		for _, e := range unjoin(err) {
			var fe *FieldError
			if errors.As(e, &fe) {
				e = &SpecError{Path: joinPath("limits", fe.Path), Err: &FieldError{Problem: fe.Problem}}
			}
			errs = append(errs, e)
		}
	}
	for _, l := range []struct {
		name string
		n    int64
	}{{enginecore.LimitMaxExpansionBytes, dst.MaxExpansionBytes}, {enginecore.LimitMaxExpansionDepth, int64(dst.MaxExpansionDepth)}} {
		if _, set := m[l.name]; set && l.n <= 0 && len(errs) == 0 {
			errs = append(errs, &SpecError{Path: "limits." + l.name, Err: errors.New("must be a positive integer")})
		}
	}
	return errors.Join(errs...)
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func processorFromDoc(item any, path string) (ProcessorSpec, error) {
	if name, ok := item.(string); ok {
		return ProcessorSpec{Name: name}, nil
	}
	m, ok := item.(map[string]any)
	if !ok {
		return ProcessorSpec{}, &SpecError{Path: path, Err: fmt.Errorf("must be a name or an object, got %s", jsvalue.TypeName(item))}
	}
	var ps ProcessorSpec
	var errs []error
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "name":
			name, ok := v.(string)
			if !ok {
				errs = append(errs, &SpecError{Path: path + ".name", Err: fmt.Errorf("must be a string, got %s", jsvalue.TypeName(v))})
			}
			ps.Name = name
		case "config":
			if v == nil {
				continue
			}
			cfg, ok := v.(map[string]any)
			if !ok {
				errs = append(errs, &SpecError{Path: path + ".config", Err: fmt.Errorf("must be an object, got %s", jsvalue.TypeName(v))})
			}
			ps.Config = cfg
		default:
			errs = append(errs, &SpecError{Path: path + "." + k, Err: errors.New("unknown field")})
		}
	}
	if _, ok := m["name"]; !ok {
		errs = append(errs, &SpecError{Path: path + ".name", Err: errors.New("missing")})
	}
	return ps, errors.Join(errs...)
}

// normalizeYAML turns what yaml.v3 decodes into the values encoding/json
// would produce: string-keyed objects and float64 numbers.
func normalizeYAML(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			n, err := normalizeYAML(item, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, &SpecError{Path: orSpec(path), Err: fmt.Errorf("object key %v is not a string", k)}
			}
			n, err := normalizeYAML(item, joinPath(path, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			n, err := normalizeYAML(item, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	}
	return v, nil
}

func orSpec(path string) string {
	if path == "" {
		return "spec"
	}
	return path
}

// WithParams returns a copy of s with params, an inference request's
// {"ProcessorName": {field: value}}, merged over the configuration of the
// processors they name (Configure); s is not changed. A processor the spec
// does not hold, or a configuration that is not an object, is an error
// naming it.
func (s *Spec) WithParams(params map[string]any) (*Spec, error) {
	cp := *s
	cp.Processors = slices.Clone(s.Processors)
	for proc, cfg := range params {
		obj, ok := cfg.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("params.%s must be an object", proc)
		}
		if err := cp.Configure(proc, obj); err != nil {
			return nil, err
		}
	}
	return &cp, nil
}

// Configure merges config into the configuration of every entry named
// name (keys in config replace existing ones). It returns
// ErrUnknownProcessor when the spec has no such entry.
func (s *Spec) Configure(name string, config map[string]any) error {
	found := false
	for i := range s.Processors {
		if s.Processors[i].Name != name {
			continue
		}
		found = true
		merged := maps.Clone(s.Processors[i].Config)
		if merged == nil {
			merged = make(map[string]any, len(config))
		}
		maps.Copy(merged, config)
		s.Processors[i].Config = merged
	}
	if !found {
		return fmt.Errorf("%w %q in spec %q", ErrUnknownProcessor, name, s.Name)
	}
	return nil
}

// Build constructs an engine from spec using the registry's constructors.
// Every problem is reported, each located by its path in the spec
// (processors[i].name, processors[i].config.FIELD); the engine is also
// validated (no empty pipeline, no duplicate names). opts configure the
// engine, for example with an observer or limits (which combine with the
// spec's: the smaller wins).
func (r *Registry) Build(spec *Spec, opts ...enginecore.Option) (*enginecore.Engine, error) {
	if spec == nil {
		return nil, &SpecError{Path: "spec", Err: errors.New("nil spec")}
	}
	var errs []error
	procs := make([]enginecore.Processor, 0, len(spec.Processors))
	for i, ps := range spec.Processors {
		path := "processors[" + strconv.Itoa(i) + "]"
		p, err := r.New(ps.Name, ps.Config)
		if err != nil {
			errs = append(errs, locate(path, err))
			continue
		}
		procs = append(procs, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	e := enginecore.New(append([]enginecore.Option{enginecore.WithProcessors(procs...), enginecore.WithLimits(spec.Limits)}, opts...)...)
	if err := e.Validate(); err != nil {
		return nil, &SpecError{Path: "processors", Err: err}
	}
	return e, nil
}

// locate prefixes the errors of one spec entry with its path.
func locate(path string, err error) error {
	if errors.Is(err, ErrUnknownProcessor) {
		return &SpecError{Path: path + ".name", Err: err}
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, locate(path, e))
		}
		return errors.Join(out...)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		p := path + ".config"
		if fe.Path != "" {
			p += "." + fe.Path
		}
		return &SpecError{Path: p, Err: &FieldError{Problem: fe.Problem}}
	}
	return &SpecError{Path: path, Err: err}
}
