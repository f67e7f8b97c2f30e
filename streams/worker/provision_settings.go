package worker

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSettingsDiffer is wrapped by the error of a worker that finds a
// stream, bucket or consumer it shares with other workers set up
// otherwise than its own settings say, without Storage.Reconcile: the
// workers of a fleet with mixed settings (a rolling upgrade, one pod
// started with other flags) would otherwise rewrite them in turn, each as
// it starts. The worker stays not ready, naming the settings, and checks
// again until they agree (TestSettingsDifferRefused).
var ErrSettingsDiffer = errors.New("worker: the server's settings differ from this worker's")

// settingDiffs lists what differs between an existing stream, bucket or
// consumer and what a worker asks of it, one setting an entry.
type settingDiffs []string

// add notes setting name when have and want differ.
func (d *settingDiffs) add(name string, have, want any) {
	if have != want {
		*d = append(*d, fmt.Sprintf("%s %v (this worker: %v)", name, have, want))
	}
}

// err returns nil when nothing differs, and otherwise an error wrapping
// ErrSettingsDiffer that names what of and every setting that differs.
func (d settingDiffs) err(what string) error {
	if len(d) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s has %s; start the worker with these settings, or with Storage.Reconcile "+
		"(cmd/worker --reconcile) to change them", ErrSettingsDiffer, what, strings.Join(d, ", "))
}
