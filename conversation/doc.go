// Package conversation turns a chat conversation stored as a tree of
// messages (each names its parent; regenerations and edits make branches)
// into the views a chat product needs: a context tree that keeps every
// branch, the flat list of the active path for rendering, and a map of all
// messages by id.
//
// Parse works in three phases, as the reference implementation does:
// indexing (lookups by id and by parent), structuring (the id tree of the
// main flow) and transformation (branch resolution, message collection, the
// flat list and the context tree). Every walk is iterative, so no input
// depth can exhaust the stack, and malformed input yields a result or an
// error, never a panic or a hang.
package conversation

// Maintainer notes: the performance machinery.
//
// The phase files mirror the reference (indexing.go, branch_resolver.go,
// message_collector.go, flatlist_builder.go, contexttree_builder.go and the
// files they use). The files named perf_* belong to no phase: they make a
// live Conversation cheap to hold and to bring up to date after an append
// (perf_arena, perf_msg_table, perf_read_set, perf_flat_resume,
// perf_run_cache, perf_view_cache) and a message's JSON cheap to read and
// write (perf_rawjson, perf_canonical, perf_canonical_text,
// perf_jsonwrite). None of them may change a result: Parse of the same
// messages is the answer, and the conformance suites check Parse.
//
// A change to a walk or to a flat-list rule must keep the machinery in step
// with it, because Parse, which TestConformance checks, walks with no read
// set, no journal and no run cache, so the conformance figures stay green
// when the machinery goes wrong. Every read of the index that decides the
// flat list goes through a recording read (index.kidsOf, rawKidsOf, lookup,
// parentOf, and flatWalker.kidsOf for the roots) or records itself (readAll
// before a scan of every message); a read that is not recorded lets
// Conversation keep, or resume past, a flat list that an append changed
// (perf_read_set). A step changes only the frame on top of the stack, and
// every other walk state it changes is journaled so that rewind can undo
// it: the flat list through put, the processed marks through their
// journal, the groups shown through walkLog.groups, index.narrowed through
// noteNarrow; new walk state needs a field in stepRecord and its undo in
// rewind (perf_flat_resume). runInputs lists every message a cached
// assistant run is built from (perf_run_cache); an object from the view
// cache is shared and never changed, viewCache.object gives a copy to change
// (perf_view_cache); indexedField lists every top-level field
// Message.index reads (perf_rawjson, TestNewMessageCanonicalReadsBackJSON).
// The tests that hold a Conversation grown one event at a time to Parse
// after every step are TestIncrementalEveryStep (which also fails when the
// read set never keeps a flat list), TestIncrementalMatchesParse,
// TestConversationMatchesParse, TestResumeMatchesParse,
// TestResumeCorpusTail, TestResumeChain (a chain resumes within four steps
// of its end) and FuzzConversationAppend; run them, and the fuzz target for
// a while, after any such change.
