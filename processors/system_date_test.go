package processors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/processors"
)

func TestSystemDateProvider(t *testing.T) {
	lateUTC := func() time.Time { return time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC) }
	zone := func(s string) *string { return &s }
	cases := []struct {
		zone *string
		want string
	}{
		{nil, "Current date: 2026-11-30 (UTC)"},
		{zone(""), "Current date: 2026-11-30 (UTC)"},
		{zone("Asia/Shanghai"), "Current date: 2026-12-01 (Asia/Shanghai)"},
		{zone("America/Los_Angeles"), "Current date: 2026-11-30 (America/Los_Angeles)"},
	}
	for _, c := range cases {
		p, err := processors.NewSystemDateProvider(processors.SystemDateConfig{Timezone: c.zone, Clock: lateUTC})
		if err != nil {
			t.Fatal(err)
		}
		out := process(t, p, parseMessages(t, `[{"id":"s","role":"system","content":"Base."}]`))
		if got := out.Messages[0]["content"]; got != "Base.\n\n"+c.want {
			t.Errorf("zone %v: %q", c.zone, got)
		}
		if out.Metadata["systemDateInjected"] != true {
			t.Error("metadata not set")
		}
	}

	off := false
	p, _ := processors.NewSystemDateProvider(processors.SystemDateConfig{Enabled: &off})
	if out := process(t, p, nil); len(out.Messages) != 0 {
		t.Fatal("disabled provider injected")
	}

	err := configError(t, processors.NameSystemDate, map[string]any{"timezone": "Mars/Olympus"})
	if !strings.Contains(err.Error(), `timezone: unknown time zone "Mars/Olympus"`) {
		t.Fatalf("err = %v", err)
	}
}
