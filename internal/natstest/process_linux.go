package natstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// childEnv carries, to a child process of the test binary, the server it
// is to run (see RunChildServer).
const childEnv = "CONVSTREAM_NATSTEST_SERVER"

// childServer is what a child process runs: one server of a cluster.
type childServer struct {
	Name        string   `json:"name"`
	Port        int      `json:"port"`
	ClusterPort int      `json:"clusterPort"`
	Routes      []string `json:"routes"`
	StoreDir    string   `json:"storeDir"`
}

// ServerProcess is a nats-server running in a child process of the test
// binary, so that a test can stop it as the kernel stops a process
// (Freeze: SIGSTOP), its connections left open and silent, which an
// in-process server cannot do.
type ServerProcess struct {
	// URL is the server's client URL.
	URL string
	cmd *exec.Cmd
}

// RunChildServer runs, in a process StartProcessCluster started, the
// server it describes, until the process is killed; in any other process
// it returns at once. A test package that starts process clusters calls
// it first in its TestMain.
func RunChildServer() {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return
	}
	var c childServer
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "natstest child:", err)
		os.Exit(2)
	}
	opts := serverOptions(c.Name, c.StoreDir, c.ClusterPort, nil)
	opts.Port = c.Port
	for _, r := range c.Routes {
		opts.Routes = append(opts.Routes, server.RoutesFromStr(r)...)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest child:", err)
		os.Exit(2)
	}
	ns.Start()
	select {} // until killed
}

// StartProcessCluster starts n JetStream servers clustered over loopback,
// each in a child process of the test binary (whose TestMain must call
// RunChildServer), killed when the test ends or the test binary dies, and
// waits until a stream of n replicas can be placed on them.
func StartProcessCluster(t testing.TB, n int) []*ServerProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clientPorts, clusterPorts := freePorts(t, n), freePorts(t, n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i])
	}
	procs := make([]*ServerProcess, n)
	for i := range n {
		spec, err := json.Marshal(childServer{Name: fmt.Sprintf("n%d", i), Port: clientPorts[i],
			ClusterPort: clusterPorts[i], Routes: routes, StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		// The server dies with the test binary, whatever ends it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &ServerProcess{URL: fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]), cmd: cmd}
		t.Cleanup(p.kill)
		procs[i] = p
	}
	waitPlaceable(t, procs)
	return procs
}

// Freeze stops the server's process (SIGSTOP): its connections stay open
// and answer nothing, as those of a server that hangs or is cut off.
func (p *ServerProcess) Freeze() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server's process (SIGCONT).
func (p *ServerProcess) Thaw() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// kill ends the server's process, frozen or not, and reaps it.
func (p *ServerProcess) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// ProcessURLs lists the client URLs of procs, starting with the first'th
// (for nats.Connect with nats.DontRandomize: the first is the one used).
func ProcessURLs(procs []*ServerProcess, first int) string {
	urls := ""
	for i := range procs {
		if i > 0 {
			urls += ","
		}
		urls += procs[(first+i)%len(procs)].URL
	}
	return urls
}

// waitPlaceable waits until a stream of len(procs) replicas can be
// created on the cluster (every peer online and current), then deletes it.
func waitPlaceable(t testing.TB, procs []*ServerProcess) {
	t.Helper()
	var nc *nats.Conn
	var err error
	deadline := time.Now().Add(60 * time.Second)
	for nc == nil {
		if nc, err = nats.Connect(ProcessURLs(procs, 0)); err != nil && time.Now().After(deadline) {
			t.Fatalf("process cluster: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.StreamConfig{Name: "natstest_ready", Subjects: []string{"natstest.ready"}, Replicas: len(procs),
		Storage: jetstream.MemoryStorage}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.CreateStream(ctx, cfg)
		if err == nil {
			err = js.DeleteStream(ctx, cfg.Name)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process cluster of %d: a stream of %d replicas not placed: %v", len(procs), len(procs), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
