package natstest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StartCluster starts n JetStream servers clustered over loopback on random
// ports, with the worker's embedded server's max payload, stopped when the
// test ends, and waits until JetStream answers and its meta leader counts
// every server as an online, current peer.
func StartCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	var servers []*server.Server
	for try := 1; ; try++ {
		var ok bool
		if servers, ok = startServers(t, n); ok {
			break
		}
		if try == 3 {
			t.Fatalf("a cluster of %d servers: not every server ready, %d times", n, try)
		}
	}
	nc, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream cluster not ready: %v", err)
		}
	}
	// A meta leader answers before every peer has reported to it: a
	// stream of n replicas placed then fails with "no suitable peers for
	// placement, peer offline" (seen in CI on a busy machine). Wait until
	// the leader counts every peer online and every server is current.
	for deadline := time.Now().Add(30 * time.Second); !clusterFormed(servers); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("JetStream cluster of %d: not every peer online and current", n)
		}
	}
	return servers
}

// startServers starts n servers clustered over loopback and reports
// whether each became ready for connections within a minute; if not, it
// has shut them down. Cluster ports are picked free by the OS, then given
// to every server as routes (a server cannot learn its peers' random ports
// otherwise, and JetStream needs its routes configured at start): another
// test's listener may take one in between, and that server never becomes
// ready ("server 1 not ready", seen once in CI on a busy machine), hence
// the tries of StartCluster.
func startServers(t testing.TB, n int) ([]*server.Server, bool) {
	t.Helper()
	ports := freePorts(t, n)
	routes := make([]*url.URL, n)
	for i, port := range ports {
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", port)}
	}
	servers := make([]*server.Server, n)
	for i := range n {
		ns, err := server.NewServer(serverOptions(fmt.Sprintf("n%d", i), t.TempDir(), ports[i], routes))
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		servers[i] = ns
	}
	for i, ns := range servers {
		if !ns.ReadyForConnections(time.Minute) {
			t.Logf("server %d of %d not ready within a minute; starting the cluster again", i, n)
			for _, ns := range servers {
				ns.Shutdown()
				ns.WaitForShutdown()
			}
			return nil, false
		}
	}
	return servers, true
}

// serverOptions are the options of one server of a test cluster: a random
// client port, the cluster port given, routes to every server.
func serverOptions(name, storeDir string, clusterPort int, routes []*url.URL) *server.Options {
	return &server.Options{
		ServerName: name, Host: "127.0.0.1", Port: -1,
		JetStream: true, StoreDir: storeDir, NoLog: true, NoSigs: true,
		// As the worker's embedded server (8 MiB), not NATS's 1 MiB:
		// snapshots of long conversations are megabytes.
		MaxPayload: 8 << 20,
		Cluster:    server.ClusterOpts{Name: "convstream-test", Host: "127.0.0.1", Port: clusterPort},
		Routes:     routes,
	}
}

// clusterFormed reports whether a meta leader counts every server as an
// online JetStream peer and every server is current with the meta group.
func clusterFormed(servers []*server.Server) bool {
	led := false
	for _, ns := range servers {
		if !ns.JetStreamIsCurrent() {
			return false
		}
		if ns.JetStreamIsLeader() {
			led = len(ns.JetStreamClusterPeers()) == len(servers)
		}
	}
	return led
}

// ClusterURLs lists the client URLs of servers, starting with the first'th
// (for nats.Connect with nats.DontRandomize: the first is the one used).
func ClusterURLs(servers []*server.Server, first int) string {
	urls := make([]string, 0, len(servers))
	for i := range servers {
		urls = append(urls, servers[(first+i)%len(servers)].ClientURL())
	}
	return strings.Join(urls, ",")
}
