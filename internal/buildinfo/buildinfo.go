// Package buildinfo describes the running binary from the build information
// the Go toolchain embeds in it: the module's version and the commit it was
// built from, for the --version flag of every command.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the main module's version: a tag such as v0.1.0, a
	// pseudo-version, or "(devel)" when the toolchain could not tell.
	Version string
	// Revision is the VCS commit, empty when the build did not record one
	// (go build -buildvcs=false, or no checkout).
	Revision string
	// Modified is true when the checkout had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Read returns the running binary's build information.
func Read() Info {
	info := Info{Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the line --version prints after the command's name, e.g.
// "v0.1.0 (commit 0123abcd, modified) go1.26.0".
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		s += " (commit " + i.Revision
		if i.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s", s, i.GoVersion)
}
