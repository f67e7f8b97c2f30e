package worker

import (
	"testing"
)

func TestBackoff(t *testing.T) {
	if backoff(1) != 100e6 || backoff(2) != 200e6 || backoff(50) != 10e9 {
		t.Errorf("backoff: %v %v %v", backoff(1), backoff(2), backoff(50))
	}
}
