package streams

// Permissions are the NATS subjects a worker of one subject prefix needs,
// and nothing more: with them a worker of prefix "acme" cannot read or
// write another prefix's events, snapshots, errors or inference, nor its
// stream or bucket through the JetStream API. Put them in a nats-server
// user's permissions (see docs/operations.md):
//
//	permissions: { publish: { allow: [...Publish] }, subscribe: { allow: [...Subscribe] },
//	               allow_responses: true }
//
// allow_responses lets the worker reply to inference requests (in the
// requester's inbox) without a right to publish into every inbox.
type Permissions struct {
	Publish, Subscribe []string
}

// WorkerPermissions returns the permissions of a worker (and of the
// clients of its deployment: convctl needs a subset) for the subjects s.
func WorkerPermissions(s Subjects) Permissions {
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
			p + ".>", // events (clients), snapshots, results, errors, inference requests
			"$JS.API.INFO",
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
			"$KV." + bucket + ".>",
			"$SRV.>", // the inference micro service's discovery replies
			// The checkpoint bucket (see WithCheckpoints): create, get, put.
			"$JS.API.STREAM.*." + cpStream,
			"$JS.API.STREAM.MSG.*." + cpStream,
			"$JS.API.DIRECT.GET." + cpStream,
			"$JS.API.DIRECT.GET." + cpStream + ".>",
			"$KV." + checkpoints + ".>",
		},
		Subscribe: []string{
			p + ".>",
			"_INBOX.>",
			"$KV." + bucket + ".>",
			"$KV." + members + ".>",
			"$SRV.>",
		},
	}
	// The errors stream (errorstream.go): the worker creates it and reads
	// the max-deliveries advisories of its consumers (deadletter.go);
	// clients read it (Client.Errors).
	perms.Publish = append(perms.Publish, errorsWriterPermissions(s)...)
	perms.Publish = append(perms.Publish, errorsReaderPermissions(s)...)
	perms.Subscribe = append(perms.Subscribe, maxDeliveriesSubject(stream))
	return perms
}
