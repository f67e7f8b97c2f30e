package conversation

import "math"

// Branch resolution: which of several sibling messages is the active one.
// The choice, in order: metadata.activeBranchIndex when it names a sibling;
// none at all when it is one past the last sibling (the client is creating
// that branch right now); the first sibling that has children of its own;
// the first sibling.

// branchChoice is the outcome of resolving a branch.
type branchChoice struct {
	pos        int  // index into the siblings
	optimistic bool // the active branch does not exist yet
}

// explicitBranch reads metadata.activeBranchIndex against n siblings. It
// reports decided=false when the index says nothing usable.
func explicitBranch(m *Message, n int) (choice branchChoice, decided bool) {
	r := m.rare()
	if r == nil || !r.hasActiveBranch {
		return branchChoice{}, false
	}
	v := r.activeBranch
	if !(v >= 0) {
		return branchChoice{}, false
	}
	if v < float64(n) {
		if v != math.Trunc(v) {
			// A fractional index names no sibling; the reference then finds
			// no active branch, exactly as for a branch being created.
			return branchChoice{optimistic: true}, true
		}
		return branchChoice{pos: int(v)}, true
	}
	if v == float64(n) {
		return branchChoice{optimistic: true}, true
	}
	return branchChoice{}, false
}

// activeBranch resolves the active sibling among siblings of parent m;
// hasKids tells whether a sibling has children of its own. siblings must
// not be empty.
func activeBranch(m *Message, siblings []int32, hasKids func(int32) bool) branchChoice {
	if c, ok := explicitBranch(m, len(siblings)); ok {
		return c
	}
	for i, s := range siblings {
		if hasKids(s) {
			return branchChoice{pos: i}
		}
	}
	return branchChoice{pos: 0}
}
