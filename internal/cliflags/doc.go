// Package cliflags holds the command-line flags the worker, convctl and the
// bench module's convload share: the binding of a flag to its CONVSTREAM_*
// environment variable (Env), and the NATS connection flags that yield a
// streams.ConnConfig (NATS). A flag or variable added here appears in every
// command at once; TestNATSFlagsAlike in cmd/worker, cmd/convctl and
// bench/cmd/convload checks each command's help against the one list
// (CheckNATSHelp), so that they expose the same names.
package cliflags
