package streams

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Permissions are the NATS subjects one role of one subject prefix needs,
// and nothing more: with them a user of prefix "acme" cannot read or
// write another prefix's events, snapshots, errors or inference, nor its
// stream or bucket through the JetStream API. Put them in a nats-server
// user's permissions (MarshalJSON prints that block; see
// docs/operations.md, "Isolated tenants"):
//
//	permissions: { publish: { allow: [...Publish] }, subscribe: { allow: [...Subscribe] },
//	               allow_responses: true }
//
// Replies come to the user's inbox prefix (see WithInboxPrefix): where
// tenants share a NATS account, each must have its own, or a user allowed
// "_INBOX.>" reads every reply of the account (TestTenantIsolation).
type Permissions struct {
	Publish, Subscribe []string
	// AllowResponses lets the user reply to requests it received (the
	// worker's inference replies) without a right to publish into every
	// inbox.
	AllowResponses bool
}

// Role names one of the permission sets: RoleWorker, RoleUI, RoleOrchestrator.
type Role string

// The roles, by what a user holding them does.
const (
	// RoleWorker runs the worker: it provisions and administers its
	// prefix's stream and buckets, consumes events, stores snapshots and
	// answers inference.
	RoleWorker Role = "worker"
	// RoleUI is a viewer such as the ui package's page: it reads and
	// watches its prefix's snapshots, follows deltas and errors, publishes
	// events and requests inference. It administers nothing.
	RoleUI Role = "ui"
	// RoleOrchestrator is a backend that drives a conversation: it
	// publishes events, requests inference and reads snapshots, deltas,
	// errors and inference results. It administers nothing.
	RoleOrchestrator Role = "orchestrator"
)

// Roles lists every role.
var Roles = []Role{RoleWorker, RoleUI, RoleOrchestrator}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w: role %q: want worker, ui or orchestrator", ErrInvalidConfig, s)
}

// PermissionOption configures the permissions a role is given.
type PermissionOption func(*permissionOptions)

type permissionOptions struct {
	inbox   string
	erase   bool
	kvWatch bool
}

// WithKVWatch lets a ui user follow the snapshot bucket with a KV watch,
// as clients before client.Watch's core subscription did: it may then
// create and delete consumers on the bucket's stream. Where tenants share
// a NATS account, such a consumer can deliver onto another tenant's
// subjects (see UIClientPermissions): give it only to clients that need
// it, or tenants accounts of their own.
func WithKVWatch() PermissionOption { return func(o *permissionOptions) { o.kvWatch = true } }

// WithErase lets a ui or orchestrator user erase conversations (publish
// on Subjects.AllErase): without it they may not. A worker user always
// may.
func WithErase() PermissionOption { return func(o *permissionOptions) { o.erase = true } }

// grants returns the subjects a client role publishes on for what the
// options granted it.
func (o permissionOptions) grants(s Subjects) []string {
	if o.erase {
		return []string{s.AllErase()}
	}
	return nil
}

// WithInboxPrefix names the inbox prefix the user's connections use
// (ConnConfig.InboxPrefix, nats.CustomInboxPrefix); the user may
// subscribe to replies under it only. The default, DefaultInboxPrefix, is
// right only where a tenant has a NATS account of its own.
func WithInboxPrefix(prefix string) PermissionOption {
	return func(o *permissionOptions) {
		if prefix != "" {
			o.inbox = prefix
		}
	}
}

func permissionOpts(opts []PermissionOption) permissionOptions {
	o := permissionOptions{inbox: DefaultInboxPrefix}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// PermissionsFor returns the permissions of role for the subjects s.
func PermissionsFor(role Role, s Subjects, opts ...PermissionOption) (Permissions, error) {
	switch role {
	case RoleWorker:
		return WorkerPermissions(s, opts...), nil
	case RoleUI:
		return UIClientPermissions(s, opts...), nil
	case RoleOrchestrator:
		return OrchestratorPermissions(s, opts...), nil
	}
	_, err := ParseRole(string(role))
	return Permissions{}, err
}

// WorkerPermissions returns the permissions of a worker for the subjects
// s. Give clients UIClientPermissions or OrchestratorPermissions: these
// let their holder purge and delete the stream and bucket.
func WorkerPermissions(s Subjects, opts ...PermissionOption) Permissions {
	o := permissionOpts(opts)
	p := s.Prefix()
	stream, bucket := s.EventsStream(), s.SnapshotBucket()
	kvStream := "KV_" + bucket
	members := s.MembersBucket() // partitioned mode's live workers
	checkpoints := s.CheckpointBucket()
	cpStream := "KV_" + checkpoints
	perms := Permissions{
		Publish: []string{
			"$JS.API.STREAM.*.KV_" + members,
			"$JS.API.STREAM.MSG.*.KV_" + members,
			"$JS.API.DIRECT.GET.KV_" + members + ".>",
			"$JS.API.CONSUMER.*.KV_" + members + ".>",
			"$JS.API.CONSUMER.*.KV_" + members,
			"$JS.FC.KV_" + members + ".>",
			"$KV." + members + ".>",
			p + ".>",                     // events (clients), snapshots, results, errors, inference requests
			"$JS.API.INFO",               // creating a bucket reads the account's limits
			"$JS.API.STREAM.*." + stream, // create, update, info, delete
			"$JS.API.STREAM.*." + kvStream,
			"$JS.API.STREAM.MSG.*." + stream, // get, delete
			"$JS.API.STREAM.MSG.*." + kvStream,
			"$JS.API.DIRECT.GET." + stream,
			"$JS.API.DIRECT.GET." + stream + ".>",
			"$JS.API.DIRECT.GET." + kvStream,
			"$JS.API.DIRECT.GET." + kvStream + ".>",
			"$JS.API.CONSUMER.*." + stream, // ephemeral (ordered) consumers
			"$JS.API.CONSUMER.*." + stream + ".>",
			"$JS.API.CONSUMER.*." + kvStream,
			"$JS.API.CONSUMER.*." + kvStream + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + kvStream + ".>",
			"$JS.ACK." + stream + ".>",
			"$JS.ACK." + kvStream + ".>",
			"$JS.FC." + stream + ".>",
			"$JS.FC." + kvStream + ".>",
			s.AllSnapshotKeys(),
			// The checkpoint bucket (see WithCheckpoints): create, get, put.
			"$JS.API.STREAM.*." + cpStream,
			"$JS.API.STREAM.MSG.*." + cpStream,
			"$JS.API.DIRECT.GET." + cpStream,
			"$JS.API.DIRECT.GET." + cpStream + ".>",
			"$KV." + checkpoints + ".>",
			// The replies stream: the worker creates it for the
			// orchestrators, which may only consume from it.
			"$JS.API.STREAM.*." + s.RepliesStream(),
			// cmd/worker --orchestrator takes reply requests on the
			// worker's connection (TestOrchestratorRole).
			"$JS.API.CONSUMER.*." + s.RepliesStream() + ".>",
			"$JS.API.CONSUMER.MSG.NEXT." + s.RepliesStream() + ".*",
			"$JS.ACK." + s.RepliesStream() + ".>",
			// Erasures (erase.go): the receipts stream, and the secure
			// deletes of a conversation's replies and error records.
			"$JS.API.STREAM.*." + s.ReceiptsStream(),
			"$JS.API.STREAM.MSG.*." + s.RepliesStream(),
			"$JS.API.STREAM.MSG.*." + s.ErrorsStream(),
		},
		Subscribe: []string{
			p + ".>",
			o.inbox + ".>",
			s.AllSnapshotKeys(),
			"$KV." + members + ".>",
			"$SRV.>", // discovery requests to the inference micro service
		},
		// Inference and discovery replies go to the requester's inbox.
		AllowResponses: true,
	}
	// The errors stream (reports_errorstream.go): the worker creates it and reads
	// the max-deliveries advisories of its consumers (reports_deadletter.go);
	// clients read it (Client.Errors).
	perms.Publish = append(perms.Publish, errorsWriterPermissions(s)...)
	perms.Publish = append(perms.Publish, errorsReaderPermissions(s)...)
	perms.Subscribe = append(perms.Subscribe, MaxDeliveriesAdvisory(stream))
	return perms
}

// snapshotReads are the JetStream API subjects that read the snapshot
// bucket and nothing else: its stream's info (binding the bucket), a key
// by direct get (the bucket allows it) or by the stream's message get.
func snapshotReads(s Subjects) []string {
	kvStream := "KV_" + s.SnapshotBucket()
	return []string{
		"$JS.API.STREAM.INFO." + kvStream,
		"$JS.API.DIRECT.GET." + kvStream,
		"$JS.API.DIRECT.GET." + kvStream + ".>",
		"$JS.API.STREAM.MSG.GET." + kvStream,
	}
}

// UIClientPermissions returns the permissions of a viewer of the subjects
// s: publish events and inference requests; read a snapshot (KV get) and
// the stored errors; follow the stored snapshots on the bucket's key
// subjects (client.Watch, with a core subscription), deltas and errors.
// It creates no consumer, so it may create none: not on the events
// stream, nor on the snapshot bucket. Permissions see subjects only, not
// a push consumer's delivery subject, so a consumer of its own would let
// a ui user have the server deliver onto any subject of its account,
// another tenant's deltas included where tenants share one. WithKVWatch
// gives it the rights of a KV watch back, for clients that follow the
// bucket with one. It may delete or change no stream or bucket, nor
// write a snapshot.
func UIClientPermissions(s Subjects, opts ...PermissionOption) Permissions {
	o := permissionOpts(opts)
	p := s.Prefix()
	publish := []string{
		p + ".events.>",
		p + ".inference.*",
		p + ".doctor.*",
		p + ".replies.*", // ask for a reply
		p + ".stop.*",    // stop one
	}
	if o.kvWatch {
		publish = append(publish, kvWatchPermissions(s)...)
	}
	return Permissions{
		Publish: append(publish, append(append(snapshotReads(s), errorsReaderPermissions(s)...), o.grants(s)...)...),
		Subscribe: []string{
			o.inbox + ".>",
			p + ".snapshots.>",
			p + ".errors.>",
			p + ".results.>",    // pipeline failures of inference (the TypeScript client follows them)
			s.AllSnapshotKeys(), // the stored snapshots, as written
		},
	}
}

// kvWatchPermissions are the JetStream API subjects of a KV watch on the
// snapshot bucket (WithKVWatch): an ordered consumer created and, when
// the watch stops, deleted, and its flow control. The JetStream API's
// create names no durable in its subject, so these cannot refuse a
// durable either: a tenant's limits (natsembed.TenantLimits.MaxConsumers)
// bound how many it creates, and the bucket's consumer limits how long
// one lives unused (worker.Storage.WatchIdle).
func kvWatchPermissions(s Subjects) []string {
	kvStream := "KV_" + s.SnapshotBucket()
	return []string{
		"$JS.API.CONSUMER.CREATE." + kvStream,
		"$JS.API.CONSUMER.CREATE." + kvStream + ".>",
		"$JS.API.CONSUMER.DELETE." + kvStream + ".*",
		"$JS.FC." + kvStream + ".>",
	}
}

// OrchestratorPermissions returns the permissions of a backend driving
// conversations of the subjects s: publish events and inference requests;
// read a snapshot (KV get) and the stored errors; follow deltas, errors and
// inference results. As cmd/orchestrator it also takes reply requests from
// the replies stream (its info, pulls and acks on RepliesConsumer, and
// setting that consumer's ack wait and deliveries) and writes the
// replies: chunks and completions, refusals on the errors subject,
// answers to stop requests (TestOrchestratorRole). It creates, changes,
// purges or deletes no stream: the worker creates the replies stream
// (RepliesStreamConfig), and a create would let it name any subjects,
// another tenant's too where tenants share an account. Nor does it create
// another consumer: the worker creates RepliesConsumer, a pull consumer,
// which JetStream will not turn into a push one, and the work queue then
// takes no other, so the role cannot have the server deliver the
// requests onto another subject (TestOrchestratorMakesNoOtherConsumer).
func OrchestratorPermissions(s Subjects, opts ...PermissionOption) Permissions {
	o := permissionOpts(opts)
	p := s.Prefix()
	replies := s.RepliesStream()
	return Permissions{
		Publish: append([]string{
			p + ".events.>",
			p + ".chunks.*", // a reply's chunks
			p + ".inference.*",
			p + ".doctor.*",
			p + ".replies.*",
			p + ".errors.*", // a refused reply request
			"$JS.API.STREAM.INFO." + replies,
			"$JS.API.CONSUMER.CREATE." + replies + "." + RepliesConsumer,
			"$JS.API.CONSUMER.INFO." + replies + "." + RepliesConsumer,
			"$JS.API.CONSUMER.MSG.NEXT." + replies + "." + RepliesConsumer,
			"$JS.ACK." + replies + "." + RepliesConsumer + ".>",
		}, append(append(snapshotReads(s), errorsReaderPermissions(s)...), o.grants(s)...)...),
		Subscribe: []string{
			o.inbox + ".>",
			p + ".snapshots.>",
			p + ".errors.>",
			p + ".results.>",
			p + ".stop.*", // stops of the replies it writes
		},
		// The answer to a stop goes to the requester's inbox.
		AllowResponses: true,
	}
}

// serverPermissions is the permissions block of a nats-server
// configuration file.
type serverPermissions struct {
	Publish        subjectList `json:"publish"`
	Subscribe      subjectList `json:"subscribe"`
	AllowResponses bool        `json:"allow_responses,omitempty"`
}

type subjectList struct {
	Allow []string `json:"allow"`
}

// MarshalJSON writes p as a nats-server user's permissions block:
// {"publish":{"allow":[...]},"subscribe":{"allow":[...]},"allow_responses":true}.
// nats-server configuration files accept JSON, so it can be pasted in —
// written by an encoder that leaves ">" as it is (ConfigJSON): the
// server's parser knows no \u escapes.
func (p Permissions) MarshalJSON() ([]byte, error) {
	return ConfigJSON(serverPermissions{
		Publish:        subjectList{Allow: nonNil(p.Publish)},
		Subscribe:      subjectList{Allow: nonNil(p.Subscribe)},
		AllowResponses: p.AllowResponses,
	})
}

// ConfigJSON encodes v as JSON that a nats-server configuration file
// accepts: without HTML escapes (json.Marshal writes ">" as \u003e, which
// the server's parser refuses) and without a trailing newline.
func ConfigJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// errorsWriterPermissions are the subjects a worker needs for the errors
// stream beyond those of its prefix: create, update and look it up.
func errorsWriterPermissions(s Subjects) []string {
	return []string{"$JS.API.STREAM.*." + s.ErrorsStream()}
}

// errorsReaderPermissions are the subjects a client needs to read the
// errors stream (Client.Errors): its info, and gets of its messages by
// subject (direct, or through the leader).
func errorsReaderPermissions(s Subjects) []string {
	stream := s.ErrorsStream()
	return []string{
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.DIRECT.GET." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
	}
}
