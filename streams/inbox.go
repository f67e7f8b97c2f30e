package streams

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
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

// ConnInbox is the inbox prefix of nc's reply subjects: its
// ConnConfig.InboxPrefix, or DefaultInboxPrefix.
func ConnInbox(nc *nats.Conn) string {
	if nc.Opts.InboxPrefix != "" {
		return nc.Opts.InboxPrefix
	}
	return DefaultInboxPrefix
}

// Answerable reports whether a service whose connection's inbox prefix is
// inbox answers a request whose reply subject is reply: only into that
// inbox, where the clients of its tenant receive their answers
// (ConnConfig.InboxPrefix is the same for a tenant's worker and clients).
// nats-server checks a publisher's subject against its permissions but
// not its reply subject, so any other reply subject would have the
// service publish its answer where the client may not publish itself:
// where tenants share an account, onto another tenant's deltas
// (TestAnswersOnlyIntoTheInbox).
func Answerable(reply, inbox string) bool {
	return len(reply) > len(inbox)+1 && strings.HasPrefix(reply, inbox) && reply[len(inbox)] == '.'
}
