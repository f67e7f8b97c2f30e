// Package tenancytest holds the tests of tenants sharing one NATS server:
// TestTenantIsolation (every role of one tenant probing another's
// subjects, streams and inboxes, in every set-up), TestTenantQuota and the
// ui role's consumers on the snapshot bucket. In a package of their own,
// go test ./... runs their minutes beside streams/worker's tests instead
// of after them.
package tenancytest
