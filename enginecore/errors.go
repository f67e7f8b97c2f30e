package enginecore

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrEmptyPipeline is reported by Validate for a pipeline without processors.
	ErrEmptyPipeline = errors.New("no processors in pipeline")
	// ErrDuplicateProcessor is reported by Validate when two processors share a name.
	ErrDuplicateProcessor = errors.New("duplicate processor names")
	// ErrUnnamedProcessor is reported by Validate for a processor without a name.
	ErrUnnamedProcessor = errors.New("processor missing name")
	// ErrNilProcessor is reported by Validate for a nil entry.
	ErrNilProcessor = errors.New("nil processor")
	// ErrProcessorPanic is the cause of a PipelineError raised by a panicking processor.
	ErrProcessorPanic = errors.New("processor panicked")
	// ErrNilContext is the cause of a PipelineError when a processor returns
	// neither a context nor an error.
	ErrNilContext = errors.New("processor returned a nil context")
)

// causeLimit is how much of the cause's message PipelineError.Error keeps.
const causeLimit = 300

// PipelineError reports the failure of one processor. It wraps the cause, so
// errors.Is and errors.As see through it.
type PipelineError struct {
	// Processor is the name of the failing processor.
	Processor string
	// Cause is what the processor returned, or the recovered panic.
	Cause error
}

// Error returns "Processor [NAME] execution failed: CAUSE", with CAUSE cut
// to 300 characters followed by "…" when longer.
func (e *PipelineError) Error() string {
	cause := "<nil>"
	if e.Cause != nil {
		cause = truncate(e.Cause.Error(), causeLimit)
	}
	return "Processor [" + e.Processor + "] execution failed: " + cause
}

// Unwrap returns the cause.
func (e *PipelineError) Unwrap() error { return e.Cause }

// MarshalJSON renders the error as {"name","message","processorName","cause"}.
func (e *PipelineError) MarshalJSON() ([]byte, error) {
	out := struct {
		Name          string `json:"name"`
		Message       string `json:"message"`
		ProcessorName string `json:"processorName"`
		Cause         string `json:"cause,omitempty"`
	}{Name: "PipelineError", Message: e.Error(), ProcessorName: e.Processor}
	if e.Cause != nil {
		out.Cause = e.Cause.Error()
	}
	return json.Marshal(out)
}

// truncate cuts s to limit characters (runes) and appends an ellipsis when
// something was cut.
func truncate(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %w", ErrProcessorPanic, err)
	}
	return fmt.Errorf("%w: %v", ErrProcessorPanic, v)
}
