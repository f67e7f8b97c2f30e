package natsembed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Tenant is one tenant of a NATS server shared by several: its subject
// prefix, the NATS account it lives in, and its users, each in a role
// whose permissions (PermissionsFor) are generated, never written by hand.
//
// An account of its own per tenant is the recommended set-up: accounts
// share no subject, stream or inbox, so isolation holds whatever a user's
// permissions say. Tenants may share an account instead when each has
// its own inbox prefix: then permissions are all that keeps them apart,
// and they do so only for the ui and orchestrator roles — a worker's user
// may create and change its streams, and a stream captures any subject of
// its account (see docs/operations.md, "Isolated tenants").
type Tenant struct {
	// Prefix is the tenant's subject prefix (Subjects).
	Prefix string `json:"prefix"`
	// Account is the NATS account; empty means one of the tenant's own,
	// named by its prefix (acme.eu → ACME_EU). Tenants naming the same
	// account share it.
	Account string `json:"account,omitempty"`
	// InboxPrefix is the inbox prefix of the tenant's connections (the
	// worker's and its clients' ConnConfig.InboxPrefix); empty means
	// DefaultInboxPrefix. Required where tenants share an account.
	InboxPrefix string `json:"inboxPrefix,omitempty"`
	// Users act for the tenant.
	Users []TenantUser `json:"users"`
	// Limits bound what the tenant's account may hold in JetStream, so
	// that one tenant cannot take the server's storage or consumers from
	// the others; nil means none but the server's. Tenants sharing an
	// account share its limits: only one of them may declare them.
	Limits *TenantLimits `json:"limits,omitempty"`
}

// TenantLimits are the JetStream limits of a tenant's account (the
// account's jetstream block in nats-server's configuration). A zero field
// means no limit of that kind. Past MaxStorage the server refuses the
// account's writes (publishes, snapshot stores) with "insufficient
// resources", past MaxStreams and MaxConsumers it refuses to create
// more: the tenant's own streams and buckets are three (events, errors,
// snapshots) and two with --checkpoints and --partitions (checkpoints,
// members); its consumers, one per worker or partition, one per watch
// of each UI.
type TenantLimits struct {
	// MaxStorage is the file storage the account may use, in bytes.
	MaxStorage int64 `json:"maxStorage,omitempty"`
	// MaxMemory is the memory storage the account may use, in bytes.
	MaxMemory int64 `json:"maxMemory,omitempty"`
	// MaxStreams is how many streams (buckets included) it may hold.
	MaxStreams int `json:"maxStreams,omitempty"`
	// MaxConsumers is how many consumers it may hold, all streams
	// together.
	MaxConsumers int `json:"maxConsumers,omitempty"`
}

// jetStream returns the account's jetstream block: "enabled", or the
// limits.
func (l *TenantLimits) jetStream() any {
	if l == nil {
		return "enabled"
	}
	block := map[string]int64{}
	for k, v := range map[string]int64{"max_file": l.MaxStorage, "max_mem": l.MaxMemory,
		"max_streams": int64(l.MaxStreams), "max_consumers": int64(l.MaxConsumers)} {
		if v > 0 {
			block[k] = v
		}
	}
	if len(block) == 0 {
		return "enabled"
	}
	return block
}

// TenantUser is a NATS user acting for a tenant in one role.
type TenantUser struct {
	// User and Password authenticate with a name; the password may be a
	// bcrypt hash (nats server passwd), which keeps the file free of it.
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// NKey is a user's public nkey (U...) instead of a name and password.
	NKey string `json:"nkey,omitempty"`
	// Role is worker, ui or orchestrator.
	Role streams.Role `json:"role"`
	// Erase grants a ui or orchestrator user the right to erase
	// conversations (streams.WithErase); a worker user has it.
	Erase bool `json:"erase,omitempty"`
	// KVWatch lets a ui user follow the snapshot bucket with a KV watch
	// (streams.WithKVWatch), as clients of earlier releases do: it may
	// then create consumers on the bucket's stream, which in a shared
	// account can deliver onto another tenant's subjects.
	KVWatch bool `json:"kvWatch,omitempty"`
}

// tenantsFile is the JSON file LoadTenants reads.
type tenantsFile struct {
	Tenants []Tenant `json:"tenants"`
}

// LoadTenants reads a JSON file {"tenants": [Tenant, ...]} and checks it
// (CheckTenants). Unknown fields are errors: a misspelt "role" must not
// leave a user without permissions.
func LoadTenants(path string) ([]Tenant, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: tenants: %w", streams.ErrInvalidConfig, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f tenantsFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: tenants file %s: %w", streams.ErrInvalidConfig, path, err)
	}
	if err := CheckTenants(f.Tenants); err != nil {
		return nil, err
	}
	return f.Tenants, nil
}

// accountName keeps account names to plain characters.
var accountName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// account returns the tenant's account name.
func (t Tenant) account() string {
	if t.Account != "" {
		return t.Account
	}
	s, _ := streams.NewSubjects(t.Prefix)
	return s.StreamName()
}

// inbox returns the tenant's inbox prefix.
func (t Tenant) inbox() string {
	if t.InboxPrefix != "" {
		return t.InboxPrefix
	}
	return streams.DefaultInboxPrefix
}

// CheckTenants reports the first problem of a tenant list, naming its
// place (tenants[1].users[0].role): a bad or repeated prefix, account,
// user or inbox prefix; a user without credentials or role; tenants that
// share an account without inbox prefixes of their own, or whose
// subjects, streams or inboxes would overlap.
func CheckTenants(tenants []Tenant) error {
	if len(tenants) == 0 {
		return fmt.Errorf("%w: tenants: none declared", streams.ErrInvalidConfig)
	}
	users := map[string]string{}
	byAccount := map[string][]int{}
	for i, t := range tenants {
		at := fmt.Sprintf("tenants[%d]", i)
		if t.Prefix == "" {
			return fmt.Errorf("%w: %s.prefix: missing", streams.ErrInvalidConfig, at)
		}
		if _, err := streams.NewSubjects(t.Prefix); err != nil {
			return fmt.Errorf("%s.prefix: %w", at, err)
		}
		if !accountName.MatchString(t.account()) || t.account() == "$G" || t.account() == "$SYS" {
			return fmt.Errorf("%w: %s.account %q: want 1 to 64 of [A-Za-z0-9_-]", streams.ErrInvalidConfig, at, t.Account)
		}
		if t.InboxPrefix != "" {
			if err := streams.ValidInboxPrefix(t.InboxPrefix); err != nil {
				return fmt.Errorf("%s.inboxPrefix: %w", at, err)
			}
		}
		if len(t.Users) == 0 {
			return fmt.Errorf("%w: %s.users: none", streams.ErrInvalidConfig, at)
		}
		for j, u := range t.Users {
			uat := fmt.Sprintf("%s.users[%d]", at, j)
			if _, err := streams.ParseRole(string(u.Role)); err != nil {
				return fmt.Errorf("%s.role: %w", uat, err)
			}
			id := u.User
			switch {
			case u.NKey != "" && (u.User != "" || u.Password != ""):
				return fmt.Errorf("%w: %s: a user and password, or an nkey, not both", streams.ErrInvalidConfig, uat)
			case u.NKey != "":
				if !nkeys.IsValidPublicUserKey(u.NKey) {
					return fmt.Errorf("%w: %s.nkey: want a public user nkey (U...)", streams.ErrInvalidConfig, uat)
				}
				id = u.NKey
			case u.User == "" || u.Password == "":
				return fmt.Errorf("%w: %s: needs a user and a password, or an nkey", streams.ErrInvalidConfig, uat)
			}
			if strings.ContainsFunc(u.User+u.Password+u.NKey, unicode.IsControl) {
				return fmt.Errorf("%w: %s: control characters in a user, password or nkey", streams.ErrInvalidConfig, uat)
			}
			if prev, dup := users[id]; dup {
				return fmt.Errorf("%w: %s: user %q is declared already at %s", streams.ErrInvalidConfig, uat, id, prev)
			}
			users[id] = uat
		}
		if l := t.Limits; l != nil && (l.MaxStorage < 0 || l.MaxMemory < 0 || l.MaxStreams < 0 || l.MaxConsumers < 0) {
			return fmt.Errorf("%w: %s.limits: negative", streams.ErrInvalidConfig, at)
		}
		byAccount[t.account()] = append(byAccount[t.account()], i)
	}
	for account, members := range byAccount {
		if len(members) < 2 {
			continue
		}
		limited := -1
		for _, i := range members {
			if tenants[i].Limits != nil {
				if limited >= 0 {
					return fmt.Errorf("%w: tenants[%d].limits: tenants[%d] declares the limits of account %s already",
						streams.ErrInvalidConfig, i, limited, account)
				}
				limited = i
			}
		}
		for _, i := range members {
			if tenants[i].InboxPrefix == "" {
				s, _ := streams.NewSubjects(tenants[i].Prefix)
				return fmt.Errorf("%w: tenants[%d].inboxPrefix: tenants sharing account %s need inbox prefixes of their own (e.g. %s)",
					streams.ErrInvalidConfig, i, account, streams.TenantInboxPrefix(s))
			}
		}
		for x, i := range members {
			for _, j := range members[x+1:] {
				if err := apart(tenants[i], tenants[j]); err != nil {
					return fmt.Errorf("%w: tenants[%d] and tenants[%d] share account %s: %w", streams.ErrInvalidConfig, i, j, account, err)
				}
			}
		}
	}
	return nil
}

// apart reports why two tenants of one account could reach each other's
// subjects, streams or inboxes through their names alone.
func apart(a, b Tenant) error {
	under := func(x, y string) bool { return x == y || strings.HasPrefix(y, x+".") || strings.HasPrefix(x, y+".") }
	sa, _ := streams.NewSubjects(a.Prefix)
	sb, _ := streams.NewSubjects(b.Prefix)
	switch {
	case under(a.Prefix, b.Prefix):
		return fmt.Errorf("subject prefixes %q and %q overlap", a.Prefix, b.Prefix)
	case sa.StreamName() == sb.StreamName():
		return fmt.Errorf("subject prefixes %q and %q name the same streams (%s)", a.Prefix, b.Prefix, sa.EventsStream())
	case under(a.inbox(), b.inbox()):
		return fmt.Errorf("inbox prefixes %q and %q overlap", a.inbox(), b.inbox())
	case under(a.inbox(), b.Prefix) || under(b.inbox(), a.Prefix):
		return fmt.Errorf("an inbox prefix lies under the other's subject prefix (%q, %q; %q, %q)", a.inbox(), b.Prefix, b.inbox(), a.Prefix)
	}
	return nil
}

// serverAccount is an account of a nats-server configuration file.
type serverAccount struct {
	JetStream any          `json:"jetstream"` // "enabled" or a block of limits
	Users     []serverUser `json:"users"`
}

type serverUser struct {
	User        string              `json:"user,omitempty"`
	Password    string              `json:"password,omitempty"`
	NKey        string              `json:"nkey,omitempty"`
	Permissions streams.Permissions `json:"permissions"`
}

// AccountsConfig returns the nats-server configuration that declares the
// tenants' accounts, each with JetStream enabled, and their users with
// the permissions of their roles, as JSON (which nats-server reads):
// {"accounts": {"ACME": {"jetstream": "enabled", "users": [...]}}}, the
// jetstream block holding the account's limits where a tenant declares
// them ({"max_file": ..., "max_streams": ..., "max_consumers": ...}). It
// holds the users' passwords as given.
func AccountsConfig(tenants []Tenant) ([]byte, error) {
	if err := CheckTenants(tenants); err != nil {
		return nil, err
	}
	accounts := map[string]*serverAccount{}
	for _, t := range tenants {
		s, _ := streams.NewSubjects(t.Prefix)
		acc := accounts[t.account()]
		if acc == nil {
			acc = &serverAccount{JetStream: "enabled"}
			accounts[t.account()] = acc
		}
		if t.Limits != nil {
			acc.JetStream = t.Limits.jetStream()
		}
		for _, u := range t.Users {
			opts := []streams.PermissionOption{streams.WithInboxPrefix(t.InboxPrefix)}
			if u.Erase {
				opts = append(opts, streams.WithErase())
			}
			if u.KVWatch {
				opts = append(opts, streams.WithKVWatch())
			}
			p, err := streams.PermissionsFor(u.Role, s, opts...)
			if err != nil {
				return nil, err
			}
			acc.Users = append(acc.Users, serverUser{User: u.User, Password: u.Password, NKey: u.NKey, Permissions: p})
		}
	}
	names := make([]string, 0, len(accounts))
	for n := range accounts {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("{\"accounts\": {\n")
	for i, n := range names {
		body, err := streams.ConfigJSON(accounts[n])
		if err != nil {
			return nil, err
		}
		key, _ := streams.ConfigJSON(n)
		fmt.Fprintf(&b, "  %s: %s", key, body)
		if i < len(names)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}}\n")
	return b.Bytes(), nil
}

// applyTenants declares the tenants' accounts and users in o. A
// configuration file that declares authentication of its own, or
// Auth, together with tenants are refused: which one wins would
// be a guess.
func applyTenants(o *server.Options, tenants []Tenant, auth Auth) error {
	if len(tenants) == 0 {
		return nil
	}
	if auth.Enabled() {
		return fmt.Errorf("%w: embedded server: tenants, or a single user or token, not both", streams.ErrInvalidConfig)
	}
	if declaresAuth(o) {
		return fmt.Errorf("%w: embedded server: the configuration file declares authentication already; declare tenants there or here", streams.ErrInvalidConfig)
	}
	text, err := AccountsConfig(tenants)
	if err != nil {
		return err
	}
	if err := o.ProcessConfigString(string(text)); err != nil {
		return fmt.Errorf("%w: embedded server tenants: %w", streams.ErrInvalidConfig, err)
	}
	return nil
}
