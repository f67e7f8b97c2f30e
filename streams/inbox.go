package streams

import (
	"fmt"
	"strings"
)

// DefaultInboxPrefix is the NATS clients' own inbox prefix, without its
// trailing dot. Every reply to a request, every message a JetStream
// consumer pushes or a pull fetches, goes to a subject under the inbox
// prefix of the connection that asked: a user who may subscribe to
// another's inbox prefix reads all of it (TestTenantIsolation). Where
// tenants share a NATS account, give each its own (ConnConfig.InboxPrefix,
// TenantInboxPrefix, WithInboxPrefix).
const DefaultInboxPrefix = "_INBOX"

// TenantInboxPrefix is the inbox prefix recommended for the clients and
// the worker of the subjects s where tenants share an account:
// "_INBOX_" and the prefix with its dots as underscores, one subject
// token, so that no tenant's inboxes lie under another's ("_INBOX_acme.>"
// does not match "_INBOX_acme_eu.…").
func TenantInboxPrefix(s Subjects) string {
	return DefaultInboxPrefix + "_" + strings.ReplaceAll(s.Prefix(), ".", "_")
}

// ValidInboxPrefix checks an inbox prefix: subject tokens of
// [A-Za-z0-9_-] joined by dots; no wildcard, no trailing dot, no "$"
// subject (JetStream's, KV's, services').
func ValidInboxPrefix(prefix string) error {
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("%w: inbox prefix %q: want subject tokens of [A-Za-z0-9_-] joined by dots", ErrInvalidConfig, prefix)
	}
	return nil
}
