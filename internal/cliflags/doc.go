// Package cliflags holds the command-line flags the worker, convctl and the
// bench module's convload share: the binding of a flag to its CONVSTREAM_*
// environment variable (Env), and the NATS connection flags that yield a
// streams.ConnConfig (NATS). A flag or variable added here appears in every
// command at once; TestNATSFlagsAlike in cmd/worker and cmd/convctl guards
// that they expose the same names (CheckNATSHelp).
package cliflags
