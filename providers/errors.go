package providers

import "errors"

// ErrUnknownFormat is returned for a format name Build does not know.
var ErrUnknownFormat = errors.New("providers: unknown format")
