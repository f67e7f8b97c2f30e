package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/convstream/convstream", Version: "v0.1.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	if got, want := fromBuildInfo(bi).String(), "v0.1.0 (commit 0123abcd, modified) go1.26.0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	bi = &debug.BuildInfo{GoVersion: "go1.26.0"}
	if got, want := fromBuildInfo(bi).String(), "(devel) go1.26.0"; got != want {
		t.Errorf("String() without VCS = %q, want %q", got, want)
	}
}
