// Package read reads what a worker has stored in JetStream: the heads of
// its conversations' snapshots, from the snapshot bucket, their
// checkpoints, from the checkpoint bucket, and their events, from the
// events stream. The worker decides what to read (a
// conversation's head, its first, next or last event, a batch of them);
// a Reader decides how: from the stream's leader where the answer decides
// what a conversation holds, and from whichever replica answers first
// where an answer can only come from one that is up to date, or the
// leader confirms it.
//
// Where a change goes:
//   - reader.go: the Reader, made by New from a Config, and the reads of a
//     conversation's events.
//   - heads.go: the reads of a snapshot's head, and Mode, how they are
//     read (Pick: from the leader, confirmed by it, or direct).
//   - keys.go: Keys, the reads of a bucket's keys as its leader holds
//     them (the checkpoints).
//   - leader.go: a get from a stream's leader (the JetStream API's
//     MSG.GET), and leaderanswer.go the decoding of its answer.
//   - replica.go: direct gets, one message or a batch, answered by any
//     replica.
package read
