package streams

import (
	"errors"
	"fmt"
)

// SnapshotFormat is the version of a snapshot's form (the value of the
// snapshot bucket, and the data of TypeSnapshotUpdated), written in its
// "format" field, the first of the object so that a reader meets it before
// anything it could misread. A snapshot without the field is format 1: the
// form of the releases that wrote none, which is the same as this one.
// Readers take every format up to theirs and refuse a newer one with
// ErrNewerFormat (docs/events.md, "Versions").
const SnapshotFormat = 1

// ErrNewerFormat reports a stored form (a snapshot, a checkpoint) written by
// a newer release than the reader's, in a format it does not know: it is not
// read rather than misread. A fleet in the middle of an upgrade meets it
// until every worker runs the newer release (docs/operations.md, "Upgrades").
var ErrNewerFormat = errors.New("streams: stored by a newer release")

// CheckSnapshotFormat returns nil for a snapshot format this release reads
// (0 is a snapshot without a format: format 1), and an error wrapping
// ErrNewerFormat for a newer one.
func CheckSnapshotFormat(format int) error {
	if format < 0 || format > SnapshotFormat {
		return fmt.Errorf("%w: snapshot format %d, this release reads up to %d", ErrNewerFormat, format, SnapshotFormat)
	}
	return nil
}
