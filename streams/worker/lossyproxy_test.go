package worker

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// lossyProxy stands between a NATS client and its server, as a network
// or a client buffer that loses messages would: it passes everything
// through except the JetStream deliveries that drop says to lose (given
// the delivery's ack subject), which the client never sees. The server
// redelivers those after the consumer's AckWait.
type lossyProxy struct {
	ln      net.Listener
	server  string
	drop    func(ack string) bool
	dropped atomic.Int64
	wg      sync.WaitGroup
}

// startLossyProxy listens on a free loopback port and forwards to the
// NATS server at addr (host:port) until the test ends.
func startLossyProxy(t testing.TB, addr string, drop func(ack string) bool) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, server: addr, drop: drop}
	var mu sync.Mutex
	var conns []net.Conn
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); s.Close() }()
			go func() { defer p.wg.Done(); p.serverToClient(s, c); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's address as a NATS URL.
func (p *lossyProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// serverToClient copies the server's protocol to the client, one
// operation at a time, leaving out the deliveries to lose. A delivery is
// "MSG <subject> <sid> [reply] <size>" or "HMSG <subject> <sid> [reply]
// <header size> <size>", then its payload and CRLF; a JetStream delivery's
// reply is its ack subject.
func (p *lossyProxy) serverToClient(from io.Reader, to io.Writer) {
	r := bufio.NewReaderSize(from, 64<<10)
	w := bufio.NewWriterSize(to, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var payload []byte
		keep := true
		if bytes.HasPrefix(line, []byte("MSG ")) || bytes.HasPrefix(line, []byte("HMSG ")) {
			f := strings.Fields(string(line))
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return
			}
			payload = make([]byte, size+2) // and CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			headers := 0
			if f[0] == "HMSG" {
				headers = 1
			}
			if len(f) == 5+headers && strings.HasPrefix(f[3], "$JS.ACK.") && p.drop(f[3]) {
				keep = false
				p.dropped.Add(1)
			}
		}
		if keep {
			_, _ = w.Write(line)
			_, _ = w.Write(payload)
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// ackTokens returns the tokens of a JetStream ack subject after
// "$JS.ACK.": stream, consumer, delivered, stream sequence, consumer
// sequence, and more; nil when it is not one.
func ackTokens(ack string) []string {
	rest, ok := strings.CutPrefix(ack, "$JS.ACK.")
	if !ok {
		return nil
	}
	tokens := strings.Split(rest, ".")
	if len(tokens) > 7 { // $JS.ACK.<domain>.<account hash>.<stream>...
		tokens = tokens[2:]
	}
	if len(tokens) < 5 {
		return nil
	}
	return tokens
}
