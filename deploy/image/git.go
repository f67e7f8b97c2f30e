package image

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// FromGit fills in what cfg leaves empty from the checkout at
// cfg.ModuleDir: Revision is HEAD's commit, Version what `git describe
// --tags --always --dirty` says without a leading v (0.1.0, or a commit
// when nothing is tagged), Created HEAD's commit time, unless
// sourceDateEpoch (SOURCE_DATE_EPOCH, seconds since 1970) is set.
func FromGit(ctx context.Context, cfg Config, sourceDateEpoch string) (Config, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = cfg.ModuleDir
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var err error
	if cfg.Revision == "" {
		if cfg.Revision, err = git("rev-parse", "HEAD"); err != nil {
			return cfg, err
		}
	}
	if cfg.Version == "" {
		v, err := git("describe", "--tags", "--always", "--dirty")
		if err != nil {
			return cfg, err
		}
		cfg.Version = strings.TrimPrefix(v, "v")
	}
	if cfg.Created.IsZero() {
		epoch := sourceDateEpoch
		if epoch == "" {
			if epoch, err = git("log", "-1", "--format=%ct"); err != nil {
				return cfg, err
			}
		}
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970", epoch)
		}
		cfg.Created = time.Unix(sec, 0).UTC()
	}
	return cfg, nil
}
