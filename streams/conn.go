package streams

import (
	"context"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnConfig says how to reach NATS. Secrets (password, token, the
// credentials file's content) are passed to the client library and never
// logged.
type ConnConfig struct {
	// URL is a comma-separated list of server URLs.
	URL string
	// Name identifies the connection in server monitoring.
	Name string
	// Creds is a credentials file (JWT and NKey seed).
	Creds string
	// NKey is a file holding a user NKey seed (a plain nkey user, without
	// a JWT).
	NKey string
	// User and Password authenticate with a user name.
	User, Password string
	// Token authenticates with a token.
	Token string
	// TLSCert and TLSKey are a client certificate; TLSCA verifies the server.
	TLSCert, TLSKey, TLSCA string
	// InboxPrefix replaces "_INBOX" as the prefix of every reply subject
	// of the connection: requests, JetStream API calls, KV reads and
	// watches, consumer deliveries (see inbox.go). Empty: "_INBOX".
	InboxPrefix string
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Wait keeps trying, as after a disconnect, when no server can be
	// reached at first, rather than failing: Connect then returns at once
	// with a connection that reports nats.RECONNECTING until a server
	// answers (see WaitConnected). A worker sets it, since Kubernetes
	// starts it and its NATS servers in any order; a command-line tool
	// does not, so that a wrong URL fails at once.
	Wait bool
	// PingInterval is how often the client asks the server whether it is
	// still there, and MaxPingsOut how many unanswered asks make it drop
	// the connection as stale and reconnect to another server of URL;
	// zero: DefaultPingInterval, DefaultMaxPingsOut.
	PingInterval time.Duration
	MaxPingsOut  int
}

// DefaultPingInterval and DefaultMaxPingsOut detect a server that stopped
// answering (frozen, or cut off by the network without the connection
// closing) within 3 to 4 seconds: the client pings every second and gives
// up on the fourth ping when three are unanswered. NATS's own defaults (2
// minutes, 2) leave a client on a frozen server for minutes, its partitions
// stalled and its readiness unchanged (see docs/operations.md, "Failover").
// What it costs: one ping and pong a second on each connection, and a
// server that does not answer for 3 s under load is left as if it were gone.
const (
	DefaultPingInterval = time.Second
	DefaultMaxPingsOut  = 3
)

// Connect opens a NATS connection that reconnects forever (every 250 ms,
// with the client's jitter), to another server of the list when one stops
// answering pings (see DefaultPingInterval). extra options come last and
// may override.
func Connect(cfg ConnConfig, extra ...nats.Option) (*nats.Conn, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	ping, pings := cfg.PingInterval, cfg.MaxPingsOut
	if ping <= 0 {
		ping = DefaultPingInterval
	}
	if pings <= 0 {
		pings = DefaultMaxPingsOut
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(pings),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			log.Warn("NATS disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS async error", "subject", subject, "err", err)
		}),
	}
	if cfg.Wait {
		// The first connect's failures reach ReconnectErrHandler: log one
		// in every few so that a long wait stays readable.
		var failures int
		opts = append(opts, nats.RetryOnFailedConnect(true),
			nats.ReconnectErrHandler(func(nc *nats.Conn, err error) {
				failures++
				if failures == 1 || failures%20 == 0 {
					log.Warn("NATS not reachable; retrying", "url", RedactURL(url), "attempts", failures, "err", err)
				}
			}))
	}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(cfg.NKey)
		if err != nil {
			return nil, fmt.Errorf("streams: NATS nkey: %w", err)
		}
		opts = append(opts, opt)
	}
	if cfg.User != "" || cfg.Password != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.InboxPrefix != "" {
		if err := ValidInboxPrefix(cfg.InboxPrefix); err != nil {
			return nil, err
		}
		opts = append(opts, nats.CustomInboxPrefix(cfg.InboxPrefix))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("streams: connect to NATS at %s: %w", RedactURL(url), err)
	}
	if nc.IsConnected() {
		log.Info("NATS connected", "server", nc.ConnectedUrlRedacted())
	} else {
		log.Warn("NATS not reachable yet; waiting for it", "url", RedactURL(url))
	}
	return nc, nil
}

// WaitConnected waits until nc is connected (see ConnConfig.Wait), ctx ends
// or nc is closed.
func WaitConnected(ctx context.Context, nc *nats.Conn) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		switch nc.Status() {
		case nats.CONNECTED:
			return nil
		case nats.CLOSED:
			return fmt.Errorf("streams: waiting for NATS: %w", nats.ErrConnectionClosed)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("streams: waiting for NATS: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// RedactURL drops the user information from each of a comma-separated
// list of URLs, for logs and errors.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := neturl.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
