package natstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Operator is a NATS operator with one account (JetStream enabled) whose
// JWTs a server preloads into a memory resolver.
type Operator struct {
	t          testing.TB
	dir        string
	operatorJW string
	account    nkeys.KeyPair
	accountPub string
	accountJWT string
	sysPub     string
	sysJWT     string
}

// NewOperator creates an operator, a system account and one account with
// unlimited JetStream.
func NewOperator(t testing.TB) *Operator {
	t.Helper()
	op, err := nkeys.CreateOperator()
	check(t, err)
	opPub, err := op.PublicKey()
	check(t, err)
	o := &Operator{t: t, dir: t.TempDir()}
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "convstream-test"
	account := func(name string, js bool) (nkeys.KeyPair, string, string) {
		kp, err := nkeys.CreateAccount()
		check(t, err)
		pub, err := kp.PublicKey()
		check(t, err)
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := ac.Encode(op)
		check(t, err)
		return kp, pub, token
	}
	_, o.sysPub, o.sysJWT = account("SYS", false)
	oc.SystemAccount = o.sysPub
	o.operatorJW, err = oc.Encode(op)
	check(t, err)
	o.account, o.accountPub, o.accountJWT = account("APP", true)
	return o
}

// ServerConfig is the nats-server configuration of operator mode with a
// memory resolver holding the accounts.
func (o *Operator) ServerConfig() string {
	return "operator: " + quote(o.operatorJW) + "\nsystem_account: " + o.sysPub +
		"\nresolver: MEMORY\nresolver_preload: {\n  " + o.sysPub + ": " + quote(o.sysJWT) +
		"\n  " + o.accountPub + ": " + quote(o.accountJWT) + "\n}\n"
}

// Creds writes a creds file (user JWT and seed) for a new user of the
// account, allowed everything, and returns its path.
func (o *Operator) Creds(name string) string {
	t := o.t
	t.Helper()
	u, err := nkeys.CreateUser()
	check(t, err)
	pub, err := u.PublicKey()
	check(t, err)
	seed, err := u.Seed()
	check(t, err)
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	token, err := uc.Encode(o.account)
	check(t, err)
	creds, err := jwt.FormatUserConfig(token, seed)
	check(t, err)
	path := filepath.Join(o.dir, name+".creds")
	check(t, os.WriteFile(path, creds, 0o600))
	return path
}

// NKeyUser returns a new user nkey: its public key, for the server's
// authorization block, and a file holding its seed, for the client.
func NKeyUser(t testing.TB) (pub, seedFile string) {
	t.Helper()
	u, err := nkeys.CreateUser()
	check(t, err)
	pub, err = u.PublicKey()
	check(t, err)
	seed, err := u.Seed()
	check(t, err)
	seedFile = filepath.Join(t.TempDir(), "user.nk")
	check(t, os.WriteFile(seedFile, seed, 0o600))
	return pub, seedFile
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
