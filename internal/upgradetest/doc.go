// Package upgradetest holds TestRollingUpgrade (build tag upgrade; make
// upgrade-test): the previous release's cmd/worker, built from its commit,
// and this tree's, run in turn and together against one store while events
// flow, forward and back, every conversation checked against Parse.
package upgradetest
