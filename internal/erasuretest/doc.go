// Package erasuretest holds TestEraseEverywhere, the erasure of a
// conversation on a 3-node cluster checked down to the servers' files. Most
// of its minutes are spent waiting for the servers to compact their Raft
// logs; in a package of its own, go test ./... runs that wait beside the
// other packages' tests instead of after streams/worker's.
package erasuretest
