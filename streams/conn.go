package streams

import (
	"fmt"
	"log/slog"
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
}

// Connect opens a NATS connection that reconnects forever (every 250 ms,
// with the client's jitter). extra options come last and may override.
func Connect(cfg ConnConfig, extra ...nats.Option) (*nats.Conn, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
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
		return nil, fmt.Errorf("streams: connect to NATS: %w", err)
	}
	log.Info("NATS connected", "server", nc.ConnectedUrlRedacted())
	return nc, nil
}
