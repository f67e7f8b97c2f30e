package enginecore

import (
	"encoding/json"
	"time"
)

// PipelineResult is the outcome of a pipeline run.
type PipelineResult struct {
	// Messages are the final, model-ready messages.
	Messages []Message `json:"messages"`
	// Metadata is what the processors recorded along the way.
	Metadata map[string]any `json:"metadata"`
	// IsAborted reports whether a processor stopped the pipeline.
	IsAborted bool `json:"isAborted"`
	// AbortReason is the reason given by the aborting processor.
	AbortReason string `json:"abortReason,omitempty"`
	// Stats holds counts and timings.
	Stats Stats `json:"stats"`
}

// Stats describes how a pipeline run went.
type Stats struct {
	// ProcessedCount is the number of processors that completed.
	ProcessedCount int
	// ProcessorDurations lists the time taken by every processor that ran,
	// in pipeline order (including one that failed).
	ProcessorDurations []ProcessorDuration
	// TotalDuration is the wall time of the whole run.
	TotalDuration time.Duration
}

// ProcessorDuration is the time one processor took.
type ProcessorDuration struct {
	Name     string
	Duration time.Duration
}

// Duration returns the time taken by the named processor, if it ran.
func (s Stats) Duration(name string) (time.Duration, bool) {
	for _, d := range s.ProcessorDurations {
		if d.Name == name {
			return d.Duration, true
		}
	}
	return 0, false
}

type processorDurationJSON struct {
	Name       string  `json:"name"`
	DurationMs float64 `json:"durationMs"`
}

// MarshalJSON renders durations as fractional milliseconds:
// {"processedCount","processorDurations":[{"name","durationMs"}],"totalDurationMs"}.
func (s Stats) MarshalJSON() ([]byte, error) {
	durations := make([]processorDurationJSON, len(s.ProcessorDurations))
	for i, d := range s.ProcessorDurations {
		durations[i] = processorDurationJSON{Name: d.Name, DurationMs: millis(d.Duration)}
	}
	return json.Marshal(struct {
		ProcessedCount     int                     `json:"processedCount"`
		ProcessorDurations []processorDurationJSON `json:"processorDurations"`
		TotalDurationMs    float64                 `json:"totalDurationMs"`
	}{s.ProcessedCount, durations, millis(s.TotalDuration)})
}

// UnmarshalJSON reads the form written by MarshalJSON.
func (s *Stats) UnmarshalJSON(data []byte) error {
	var in struct {
		ProcessedCount     int                     `json:"processedCount"`
		ProcessorDurations []processorDurationJSON `json:"processorDurations"`
		TotalDurationMs    float64                 `json:"totalDurationMs"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	s.ProcessedCount = in.ProcessedCount
	s.TotalDuration = fromMillis(in.TotalDurationMs)
	s.ProcessorDurations = make([]ProcessorDuration, len(in.ProcessorDurations))
	for i, d := range in.ProcessorDurations {
		s.ProcessorDurations[i] = ProcessorDuration{Name: d.Name, Duration: fromMillis(d.DurationMs)}
	}
	return nil
}

// millis keeps microsecond precision.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fromMillis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
