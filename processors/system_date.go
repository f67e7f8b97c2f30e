package processors

import (
	"context"
	"fmt"
	"time"

	"github.com/convstream/convstream/enginecore"
)

// SystemDateConfig configures SystemDateProvider.
type SystemDateConfig struct {
	// Enabled defaults to true; false skips the provider.
	Enabled *bool `json:"enabled"`
	// Timezone is an IANA zone name; empty or null means UTC.
	Timezone *string `json:"timezone"`
	// Clock gives the current time; nil means time.Now.
	Clock Clock `json:"-"`
}

// SystemDateProvider appends "Current date: YYYY-MM-DD (ZONE)" to the
// system message.
//
// Metadata: systemDateInjected.
type SystemDateProvider struct {
	enabled bool
	zone    string
	loc     *time.Location
	clock   Clock
}

// NewSystemDateProvider returns a SystemDateProvider. It fails for an
// unknown time zone.
func NewSystemDateProvider(cfg SystemDateConfig) (*SystemDateProvider, error) {
	p := &SystemDateProvider{enabled: cfg.Enabled == nil || *cfg.Enabled, zone: "UTC", clock: cfg.Clock}
	if cfg.Timezone != nil && *cfg.Timezone != "" {
		p.zone = *cfg.Timezone
	}
	loc, err := time.LoadLocation(p.zone)
	if err != nil || p.zone == "Local" {
		return nil, fieldErr("timezone", "unknown time zone %q", p.zone)
	}
	p.loc = loc
	return p, nil
}

// Name returns "SystemDateProvider".
func (*SystemDateProvider) Name() string { return NameSystemDate }

// Process appends today's date in the configured zone.
func (p *SystemDateProvider) Process(_ context.Context, pc *enginecore.PipelineContext) (*enginecore.PipelineContext, error) {
	if !p.enabled {
		return pc, nil
	}
	today := p.clock.now().In(p.loc).Format(time.DateOnly)
	next := appendSystemContent(pc, NameSystemDate, fmt.Sprintf("Current date: %s (%s)", today, p.zone), p.clock)
	next.Metadata["systemDateInjected"] = true
	return next, nil
}

func (d deps) systemDate(raw map[string]any) (enginecore.Processor, error) {
	var cfg SystemDateConfig
	if err := decodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	cfg.Clock = d.clock
	return NewSystemDateProvider(cfg)
}
