package worker

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/streams"
)

// The limits of a conversation's snapshot are checked when an event is
// applied, before its delta goes out: an event that would take the
// snapshot past what can be stored (Limits.MaxSnapshotBytes, the server's
// max payload) or nest its branch points past Limits.MaxBranchDepth is
// rejected, as a cycle is, and the conversation keeps its last good state.
// A store that then fails for the same reasons is a bug of these bounds,
// which the store's own check catches (see refuseStore).
//
// Measuring is O(conversation): the context tree is built and encoded.
// The flatList's size is known exactly at every event (publish keeps it),
// so what is bounded between measurements is the rest, the context tree
// and the snapshot's frame: by its last measurement plus an allowance for
// each event since (treeAllowance). A conversation is measured when that
// bound reaches the limit, so one far below it is measured about once per
// (limit - size) / allowance of events, and only one near it at every
// event. Depth is bounded the same way: an event nests branch points one
// level deeper at most (an append makes its parent a branch point, a
// delete moves its children up), and a conversation of n messages cannot
// nest more than n/2; an update that moves a message (a new parentId) or
// an upsert of groups is measured at once.

// treeAllowance and treeAllowancePerByte bound what one event adds to the
// context tree's JSON: the new message's node and its id among its
// parent's tools, a compare or tasks node's ids, a branch node around its
// parent's children (about 100 bytes and the parent's id twice, the
// parentId the event names), and the digits of the snapshot's version.
const (
	treeAllowance        = 512
	treeAllowancePerByte = 4
)

// treeEstimate is what the context tree of a state not measured since it
// was loaded is taken to weigh: a node of a few ids for each message and
// twice the messages' JSON. A conversation it puts near the limit is
// measured at its next event.
func treeEstimate(c *conversation.Conversation) int {
	return 2*c.MessageBytes() + 160*c.Len()
}

// kvHeaderAllowance is what a snapshot write's headers take, with room to
// spare: nats.go's KeyValue.Update and Create send
// "Nats-Expected-Last-Subject-Sequence: <revision>", 71 bytes with the
// NATS/1.0 line at the largest revision.
const kvHeaderAllowance = 128

// snapshotLimit is the largest snapshot of conversation id that can be
// stored: Limits.MaxSnapshotBytes when set, and in any case what the
// server's max payload, and the bucket's maximum message size when it has
// one, leave of a write once its subject ($KV.<bucket>.<id>) and headers
// are counted (the server counts headers and payload against both;
// counting the subject too costs a few bytes and holds wherever a server
// counts it), and below any snapshot the server refused for its size
// (storeCap).
func (s *snapshotStore) snapshotLimit(id string) int {
	overhead := len("$KV..") + len(s.bucket) + len(id) + kvHeaderAllowance
	limit := int(s.maxPayload()) - overhead
	if m := int(s.cap.bucket.Load()); m > 0 {
		limit = min(limit, m-overhead)
	}
	if c := int(s.cap.refused.Load()); c > 0 {
		limit = min(limit, c)
	}
	if l := s.maxBytes; l > 0 {
		limit = min(limit, l)
	}
	return limit
}

// storeCap is what the server lets the worker store besides its max
// payload: the snapshot bucket's maximum message size (0: none), read when
// the worker starts, and below the smallest snapshot it refused for its
// size since (0: none), should an operator have lowered the bucket's limit
// meanwhile (TestStoreRefusedBySize).
type storeCap struct {
	bucket, refused atomic.Int64
}

// readBucket reads the bucket's maximum message size.
func (c *storeCap) readBucket(ctx context.Context, kv jetstream.KeyValue) error {
	status, err := kv.Status(ctx)
	if err != nil {
		return err
	}
	if s, ok := status.(*jetstream.KeyValueBucketStatus); ok {
		c.bucket.Store(int64(max(s.StreamInfo().Config.MaxMsgSize, 0)))
	}
	return nil
}

// refusedAt records that the server refused a snapshot of size bytes for
// its size.
func (c *storeCap) refusedAt(size int) {
	for {
		old := c.refused.Load()
		if old != 0 && old < int64(size) {
			return
		}
		if c.refused.CompareAndSwap(old, int64(size-1)) {
			return
		}
	}
}

// checkSnapshotLimits checks that the snapshot of st, which d has just
// changed (its flatList now flatBytes), stays within its limits, measuring
// it when its bounds do not tell (see above). A *RejectError names the
// limit: CodeSnapshotTooLarge or CodeTooDeep. It runs on the lane.
func (s *snapshotStore) checkSnapshotLimits(st *convState, d *delivery, flatBytes int) error {
	limit := s.snapshotLimit(st.id)
	if flatBytes > limit {
		return streams.Reject(streams.CodeSnapshotTooLarge, "the snapshot's flatList would be %d bytes, over the limit of %d", flatBytes, limit)
	}
	measure := s.degraded.strict(st.id, d.seq)
	depth := s.maxDepth
	if st.depthLeft > 0 {
		st.depthLeft--
	}
	if reshapes(d) {
		st.depthLeft = 0
	}
	if st.depthLeft <= 0 && st.conv.Len() > 2*depth {
		measure = true
	}
	bound := int(st.treeBound)
	if bound == 0 {
		bound = treeEstimate(st.conv)
	} else {
		bound += treeAllowance + treeAllowancePerByte*d.size
	}
	if flatBytes+bound > limit {
		measure = true
	}
	if !measure {
		st.treeBound = clamp32(bound)
		return nil
	}
	return s.measureSnapshot(st, d.seq, flatBytes, limit, depth)
}

// reshapes reports whether d's event may move messages in the tree, which
// may nest branch points more than one level deeper.
func reshapes(d *delivery) bool {
	if d.event == nil {
		return true
	}
	switch d.event.Type() {
	case streams.TypeMessageUpdated:
		_, moves := d.data["parentId"]
		return moves
	case streams.TypeGroupsUpserted:
		return true
	}
	return false
}

// measureSnapshot builds and encodes st's context tree and checks the
// snapshot's size (its flatList flatBytes) against limit and the tree's
// nesting against depth; within them, st's bounds start again from what
// it measured.
func (s *snapshotStore) measureSnapshot(st *convState, seq uint64, flatBytes, limit, depth int) error {
	tree, err := st.conv.ContextTree()
	if err != nil {
		return streams.RejectionOf(err)
	}
	// The frame and the tree: the flatList is left out and counted by its
	// size (one comma more than it takes).
	buf, err := encodeSnapshotOf(s.snapshotBuffer(), st.id, seq, seq, func(func([]byte) bool) {}, tree)
	if err != nil {
		return streams.RejectErr(streams.CodeInvalidData, err)
	}
	frame := len(buf)
	s.reuseSnapshotBuffer(buf)
	if size := frame + flatBytes; size > limit {
		return streams.Reject(streams.CodeSnapshotTooLarge, "the snapshot would be %d bytes, over the limit of %d", size, limit)
	}
	st.treeBound = clamp32(frame)
	st.depthLeft = int16(min(depth-treeDepth(tree), math.MaxInt16))
	return nil
}

// treeDepth returns how deeply branch nodes nest in tree.
func treeDepth(tree []conversation.Node) int {
	type level struct {
		nodes []conversation.Node
		depth int
	}
	deepest := 0
	stack := []level{{tree, 0}}
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for i := range l.nodes {
			n := &l.nodes[i]
			d := l.depth
			if n.Type == conversation.NodeBranch {
				d++
				deepest = max(deepest, d)
			}
			if len(n.Children) > 0 {
				stack = append(stack, level{n.Children, d})
			}
			if in := n.Info; in != nil {
				for _, list := range in.Branches {
					stack = append(stack, level{list, d})
				}
				for _, list := range in.Columns {
					stack = append(stack, level{list, d})
				}
				if len(in.Callbacks) > 0 {
					stack = append(stack, level{in.Callbacks, d})
				}
			}
		}
	}
	return deepest
}
