package worker

import (
	"testing"
)

func TestLRU(t *testing.T) {
	c := newLRU(2, 0, nil, nil)
	for _, id := range []string{"a", "b"} {
		c.put(&convState{id: id})
	}
	c.get("a") // b is now the least recently used
	c.put(&convState{id: "c"})
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil || c.len() != 2 {
		t.Errorf("eviction: len %d", c.len())
	}
	c.drop("a")
	if c.get("a") != nil || c.len() != 1 {
		t.Error("drop")
	}
}

func TestBackoff(t *testing.T) {
	if backoff(1) != 100e6 || backoff(2) != 200e6 || backoff(50) != 10e9 {
		t.Errorf("backoff: %v %v %v", backoff(1), backoff(2), backoff(50))
	}
}
