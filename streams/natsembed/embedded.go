package natsembed

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats-server/v2/server"
)

// Config configures an in-process NATS server with JetStream.
type Config struct {
	// Listen is HOST:PORT for clients; port -1 picks a free one. Empty
	// means 127.0.0.1:4222, and an empty host 127.0.0.1: loopback unless
	// told otherwise (0.0.0.0 for every interface).
	Listen string
	// StoreDir holds JetStream's files.
	StoreDir string
	// MaxPayload is the largest message the server accepts (snapshots of
	// long conversations are large); 0 means 8 MiB.
	MaxPayload int32
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// WebSocket is HOST:PORT of a NATS WebSocket listener for browsers
	// (the ui package's page); empty means none. An empty host means
	// 127.0.0.1 and port -1 picks a free one (see Server.WebsocketURL).
	// It speaks plain ws:// without TLS (NATS's no_tls), which is meant
	// for loopback: beyond it, terminate TLS in a proxy in front.
	WebSocket string
	// WebSocketOrigins are the origins (scheme://host:port) whose pages
	// may open a WebSocket connection; empty accepts any origin.
	WebSocketOrigins []string
	// Auth makes clients authenticate with a user and password or a
	// token (see auth.go); the zero value lets any client in.
	Auth Auth
	// Tenants declares an account per tenant (or accounts shared by
	// tenants with inbox prefixes of their own), each with JetStream, and
	// their users with the permissions of their roles (see tenants.go).
	// It excludes Auth and a ConfigFile declaring authentication.
	Tenants []Tenant
	// ConfigFile is a nats-server configuration file read first: accounts,
	// users with permissions, nkeys, operator mode, TLS. The fields above
	// override its listen address, store directory and max payload.
	ConfigFile string
}

// DefaultMaxPayload is the embedded server's default max payload.
const DefaultMaxPayload = 8 << 20

// Start starts a NATS server with JetStream in this process and
// waits until it accepts connections. Stop it with Shutdown and
// WaitForShutdown.
func Start(cfg Config) (*server.Server, error) {
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:4222"
	}
	host, port, err := splitHostPort(listen, "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("%w: listen address: %w", streams.ErrInvalidConfig, err)
	}
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("%w: embedded server needs a store directory", streams.ErrInvalidConfig)
	}
	maxPayload := cfg.MaxPayload
	if maxPayload == 0 {
		maxPayload = DefaultMaxPayload
	}
	opts, err := baseOptions(cfg.ConfigFile)
	if err != nil {
		return nil, err
	}
	if opts.ServerName == "" {
		opts.ServerName = "convstream-embedded"
	}
	opts.Host, opts.Port = host, port
	opts.JetStream, opts.StoreDir = true, cfg.StoreDir
	opts.MaxPayload, opts.NoSigs = maxPayload, true
	if err := applyTenants(opts, cfg.Tenants, cfg.Auth); err != nil {
		return nil, err
	}
	if err := cfg.Auth.apply(opts); err != nil {
		return nil, err
	}
	if cfg.WebSocket != "" {
		wsHost, wsPort, err := splitHostPort(cfg.WebSocket, "127.0.0.1")
		if err != nil {
			return nil, fmt.Errorf("%w: websocket address: %w", streams.ErrInvalidConfig, err)
		}
		opts.Websocket = server.WebsocketOpts{
			Host: wsHost, Port: wsPort, NoTLS: true, AllowedOrigins: cfg.WebSocketOrigins,
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: embedded NATS server: %w", err)
	}
	var logger *serverLogger
	if cfg.Logger != nil {
		logger = &serverLogger{l: cfg.Logger.With("component", "nats-server")}
		ns.SetLoggerV2(logger, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("natsembed: embedded NATS server on %s did not start", listen)
	}
	if logger != nil {
		logger.started.Store(true)
		attrs := []any{"version", server.VERSION, "clients", ns.ClientURL(), "store", opts.StoreDir}
		if ns.WebsocketURL() != "" && cfg.WebSocket != "" {
			attrs = append(attrs, "websocket", ns.WebsocketURL())
		}
		logger.l.Info("NATS server ready", attrs...)
	}
	return ns, nil
}

// splitHostPort splits HOST:PORT, with defHost for an empty host.
func splitHostPort(addr, defHost string) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", 0, fmt.Errorf("%q: bad port", addr)
	}
	if host == "" {
		host = defHost
	}
	return host, port, nil
}

// serverLogger routes the NATS server's log to slog. Until the server is
// ready its notices, a banner of a dozen lines (version, name, ID,
// JetStream's limits, ...), are debug: Start says the server is ready in
// one info line instead (TestStartupLogCondensed).
type serverLogger struct {
	l       *slog.Logger
	started atomic.Bool
}

func (s *serverLogger) Noticef(format string, v ...any) {
	if !s.started.Load() {
		s.l.Debug(fmt.Sprintf(format, v...))
		return
	}
	s.l.Info(fmt.Sprintf(format, v...))
}
func (s *serverLogger) Warnf(format string, v ...any)  { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Fatalf(format string, v ...any) { s.l.Error(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Errorf(format string, v ...any) { s.l.Error(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Tracef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
