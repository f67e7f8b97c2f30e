package conversation

import "maps"

// viewCache keeps the decoded objects of the stored messages (see Message)
// that a flat-list walk reads to build virtual messages, so that each is
// decoded once rather than on every read and on every walk. A decoded
// object is shared as a derived message's map is: nobody changes it. A nil
// viewCache decodes on every read.
type viewCache struct {
	views map[*Message]cachedView
	gen   uint32
	// json is the size of the JSON of the messages whose objects it holds,
	// for Conversation.Bytes.
	json int
}

type cachedView struct {
	fields map[string]any
	gen    uint32 // the walk that last read it
}

// newViewCache returns an empty cache; its map is made on first use, as
// most conversations of plain messages never need one.
func newViewCache() *viewCache { return &viewCache{} }

// view returns m's object; it must not be changed.
func (c *viewCache) view(m *Message) map[string]any {
	if c == nil || m.raw == "" {
		return m.view()
	}
	e, ok := c.views[m]
	if !ok {
		e.fields = m.view()
		c.json += len(m.raw)
	}
	if !ok || e.gen != c.gen {
		e.gen = c.gen
		if c.views == nil {
			c.views = map[*Message]cachedView{}
		}
		c.views[m] = e
	}
	return e.fields
}

// pick returns m's fields that names lists, and maybe others; the map
// must not be changed. Unless the walk already decoded all of m, only
// those fields are decoded: cheaper when m has large ones besides.
func (c *viewCache) pick(m *Message, names []string) map[string]any {
	if c != nil && m.raw != "" {
		if e, ok := c.views[m]; ok {
			return e.fields
		}
	}
	if m.raw == "" {
		return m.x.rare.fields
	}
	return pickFields(m.raw, names)
}

// object returns a copy of m's object that the caller owns.
func (c *viewCache) object(m *Message) map[string]any {
	if c == nil {
		return m.object()
	}
	return maps.Clone(c.view(m))
}

// sweep ends a walk: it drops the objects the walk did not read, which
// keeps the cache to the messages the flat list is built from.
func (c *viewCache) sweep() {
	for m, e := range c.views {
		if e.gen != c.gen {
			delete(c.views, m)
			c.json -= len(m.raw)
		}
	}
	c.gen++
}
