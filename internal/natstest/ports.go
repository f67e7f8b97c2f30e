package natstest

import (
	"net"
	"testing"
)

// freePorts returns n loopback ports free when asked: another listener may
// take one before the caller binds it (see startServers).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	return ports
}
