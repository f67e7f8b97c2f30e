package enginecore

import (
	"errors"
	"fmt"
	"strings"
)

// Validate checks the pipeline's shape: it must have at least one
// processor, every processor must be non-nil and named, and names must be
// unique. All problems are returned together; errors.Is matches
// ErrEmptyPipeline, ErrNilProcessor, ErrUnnamedProcessor and
// ErrDuplicateProcessor.
func (e *Engine) Validate() error {
	procs := e.snapshot()
	var errs []error
	if len(procs) == 0 {
		errs = append(errs, ErrEmptyPipeline)
	}

	seen := make(map[string]int, len(procs))
	var dups []string
	for i, p := range procs {
		if p == nil {
			errs = append(errs, fmt.Errorf("%w at position %d", ErrNilProcessor, i))
			continue
		}
		name := p.Name()
		if name == "" {
			errs = append(errs, fmt.Errorf("%w at position %d", ErrUnnamedProcessor, i))
			continue
		}
		seen[name]++
		if seen[name] == 2 {
			dups = append(dups, name)
		}
	}
	if len(dups) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s", ErrDuplicateProcessor, strings.Join(dups, ", ")))
	}
	return errors.Join(errs...)
}
