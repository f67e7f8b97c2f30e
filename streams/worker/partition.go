package worker

// partitions is the events stream's partition count (0: unpartitioned).
func (w *Worker) partitions() int { return w.cfg.storage.Partitions }

// eventSubject is the stored subject of a conversation's events.
func (w *Worker) eventSubject(conversationID string) string {
	return w.cfg.subjects.StoredEvents(conversationID, w.partitions())
}

// OwnedPartitions returns the partitions this worker owns now, in order:
// those it has received events of under its current pin (a partition it
// was given shows once its first event arrives). It returns nil on an
// unpartitioned stream or before Run.
func (w *Worker) OwnedPartitions() []int {
	var out []int
	for p := range w.owned {
		if w.owned[p].Load() {
			out = append(out, p)
		}
	}
	return out
}
