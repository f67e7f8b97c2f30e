package worker

import (
	"os"
	"testing"

	"github.com/convstream/convstream/internal/natstest"
)

func TestMain(m *testing.M) {
	// A process cluster's servers are this test binary run again
	// (TestClusterFaults); in them, this serves and never returns.
	natstest.RunChildServer()
	os.Exit(m.Run())
}
