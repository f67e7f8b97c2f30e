package natsembed

import (
	"fmt"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats-server/v2/server"
)

// Auth is how clients authenticate to the embedded server when no
// configuration file says otherwise: a user and password, or a token. The
// zero value requires nothing, which is safe only on loopback.
type Auth struct {
	// User and Password: one user, allowed everything.
	User, Password string
	// Token: any client presenting it, allowed everything.
	Token string
}

// Enabled reports whether the server will require authentication.
func (a Auth) Enabled() bool { return a.User != "" || a.Password != "" || a.Token != "" }

// String never shows a secret.
func (a Auth) String() string {
	switch {
	case a.Token != "":
		return "token"
	case a.User != "":
		return "user " + a.User
	}
	return "none"
}

// apply sets the authentication options of o. A configuration file that
// declares its own authentication and Auth together are refused:
// which one wins would be a guess.
func (a Auth) apply(o *server.Options) error {
	if !a.Enabled() {
		return nil
	}
	if (a.User == "") != (a.Password == "") {
		return fmt.Errorf("%w: embedded server authentication needs both a user and a password", streams.ErrInvalidConfig)
	}
	if a.User != "" && a.Token != "" {
		return fmt.Errorf("%w: embedded server authentication: a user and password, or a token, not both", streams.ErrInvalidConfig)
	}
	if declaresAuth(o) {
		return fmt.Errorf("%w: the embedded server's configuration file declares authentication already", streams.ErrInvalidConfig)
	}
	o.Username, o.Password, o.Authorization = a.User, a.Password, a.Token
	return nil
}

// declaresAuth reports whether o (read from a configuration file)
// declares authentication or accounts.
func declaresAuth(o *server.Options) bool {
	return o.Username != "" || o.Authorization != "" || len(o.Users) > 0 || len(o.Nkeys) > 0 ||
		len(o.TrustedOperators) > 0 || len(o.Accounts) > 0
}

// baseOptions returns the options of a nats-server configuration file, or
// empty options when there is none.
func baseOptions(file string) (*server.Options, error) {
	if file == "" {
		return &server.Options{}, nil
	}
	o, err := server.ProcessConfigFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: embedded server configuration: %w", streams.ErrInvalidConfig, err)
	}
	return o, nil
}
