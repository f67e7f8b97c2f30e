package convcache

// node is a value's place in its cache's order of use, with what the cache
// records of it. It takes the room of a container/list element (48 bytes)
// and keeps the cache's bookkeeping out of the value.
type node[V Value] struct {
	prev, next *node[V]
	v          V
	// size is the value's weight when last measured; lastUse when it was
	// last used (the share's clock); used the cache's epoch then; cold is
	// set while the value is compacted (see Cache.Sweep).
	size    int64
	lastUse int64
	used    uint32
	cold    bool
}

// list is a doubly linked ring through a sentinel: front the most
// recently used, back the least.
type list[V Value] struct {
	root node[V]
}

func (l *list[V]) init() { l.root.prev, l.root.next = &l.root, &l.root }

// front and back return the first and last nodes, nil when empty.
func (l *list[V]) front() *node[V] { return l.real(l.root.next) }
func (l *list[V]) back() *node[V]  { return l.real(l.root.prev) }

// prevOf and nextOf return the neighbours of n, nil at either end.
func (l *list[V]) prevOf(n *node[V]) *node[V] { return l.real(n.prev) }
func (l *list[V]) nextOf(n *node[V]) *node[V] { return l.real(n.next) }

func (l *list[V]) real(n *node[V]) *node[V] {
	if n == &l.root {
		return nil
	}
	return n
}

func (l *list[V]) pushFront(n *node[V]) {
	n.prev, n.next = &l.root, l.root.next
	l.root.next.prev = n
	l.root.next = n
}

func (l *list[V]) remove(n *node[V]) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (l *list[V]) moveToFront(n *node[V]) {
	if l.root.next == n {
		return
	}
	l.remove(n)
	l.pushFront(n)
}
