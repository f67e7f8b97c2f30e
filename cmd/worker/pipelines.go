package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/convstream/convstream/enginecore"
	"github.com/convstream/convstream/processors"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/worker"
)

// specPipelines serves the pipeline specs an inference request may name:
// "default" is the built-in spec (or DIR/default.yaml when the directory
// has one), any other NAME is DIR/NAME.yaml, .yml or .json. Specs are read
// once; engines without per-request params are built once and shared.
type specPipelines struct {
	registry *processors.Registry
	dir      string

	mu      sync.Mutex
	specs   map[string]*processors.Spec
	engines map[string]*enginecore.Engine
}

var _ worker.Pipelines = (*specPipelines)(nil)

// pipelineName keeps names to what is safe as a file name.
var pipelineName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func newSpecPipelines(registry *processors.Registry, dir string) *specPipelines {
	return &specPipelines{registry: registry, dir: dir,
		specs: map[string]*processors.Spec{}, engines: map[string]*enginecore.Engine{}}
}

// Pipeline returns the engine of spec name, with params merged over the
// configuration of the processors they name: {"ProcessorName": {...}}.
func (p *specPipelines) Pipeline(_ context.Context, name string, params map[string]any, opts ...enginecore.Option) (*enginecore.Engine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	spec, err := p.spec(name)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		if e, ok := p.engines[name]; ok {
			return e, nil
		}
	}
	cp, err := spec.WithParams(params)
	if err != nil {
		return nil, err
	}
	e, err := p.registry.Build(cp, opts...)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		p.engines[name] = e
	}
	return e, nil
}

// spec returns the parsed spec of name, reading it on first use.
func (p *specPipelines) spec(name string) (*processors.Spec, error) {
	if s, ok := p.specs[name]; ok {
		return s, nil
	}
	if !pipelineName.MatchString(name) {
		return nil, fmt.Errorf("%w: %q", streams.ErrUnknownPipeline, name)
	}
	var s *processors.Spec
	if p.dir != "" {
		for _, ext := range []string{".yaml", ".yml", ".json"} {
			path := filepath.Join(p.dir, name+ext)
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				continue
			}
			var err error
			if s, err = processors.LoadSpec(path); err != nil {
				return nil, err
			}
			break
		}
	}
	if s == nil {
		// The built-in specs (default, messages-engine), unless the
		// directory holds one of that name.
		s, _ = processors.BuiltinSpec(name)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: %q", streams.ErrUnknownPipeline, name)
	}
	p.specs[name] = s
	return s, nil
}
