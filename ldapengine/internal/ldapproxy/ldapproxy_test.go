package ldapproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
)

func TestFrameLen(t *testing.T) {
	long := func(k int, l int) []byte {
		b := []byte{0x30, byte(0x80 | k)}
		for i := k - 1; i >= 0; i-- {
			b = append(b, byte(l>>(8*i)))
		}
		return append(b, make([]byte, l)...)
	}
	cases := []struct {
		name string
		in   []byte
		want int
		err  bool
	}{
		{"empty", nil, 0, false},
		{"tag only", []byte{0x30}, 0, false},
		{"short form, empty body", []byte{0x30, 0x00}, 2, false},
		{"short form, complete", []byte{0x30, 0x03, 1, 2, 3}, 5, false},
		{"short form, followed by more", []byte{0x30, 0x01, 9, 0x30, 0x00}, 3, false},
		{"short form, partial body", []byte{0x30, 0x03, 1, 2}, 0, false},
		{"short form 127", append([]byte{0x30, 0x7f}, make([]byte, 127)...), 129, false},
		{"long form 1 byte", long(1, 200), 203, false},
		{"long form 2 bytes", long(2, 300), 304, false},
		{"long form 3 bytes", long(3, 70000), 70005, false},
		{"long form 4 bytes", long(4, 1000), 1006, false},
		{"long form, length bytes cut", []byte{0x30, 0x82, 0x01}, 0, false},
		{"long form, body cut", long(2, 300)[:100], 0, false},
		{"indefinite length", []byte{0x30, 0x80, 0, 0}, 0, true},
		{"five length bytes", []byte{0x30, 0x85, 0, 0, 0, 0, 1, 0}, 0, true},
		{"other tag", []byte{0x31, 0x00}, 0, true},
		{"TLS record", []byte{0x16, 0x03, 0x03, 0x00, 0x10}, 0, true},
		{"above MaxMessage", []byte{0x30, 0x84, 0x7f, 0xff, 0xff, 0xff}, 0, true},
	}
	for _, c := range cases {
		got, err := FrameLen(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: FrameLen = %d, %v; want %d, error %v", c.name, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, ErrNotLDAP) {
			t.Errorf("%s: error %v is not ErrNotLDAP", c.name, err)
		}
	}
}

// echoServer answers every LDAP message it receives with the same message,
// unless its connection is told to be quiet, and records what it got.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	got      [][]byte
	accepted int
	conns    []net.Conn
	split    bool // write each answer in two parts, 20 ms apart
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted++
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *echoServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *echoServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	var pending []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		pending = append(pending, buf[:n]...)
		for {
			size, ferr := FrameLen(pending)
			if ferr != nil || size == 0 {
				break
			}
			msg := append([]byte(nil), pending[:size]...)
			pending = pending[size:]
			s.mu.Lock()
			s.got = append(s.got, msg)
			split := s.split
			s.mu.Unlock()
			if split && len(msg) > 1 {
				_, _ = c.Write(msg[:len(msg)/2])
				time.Sleep(20 * time.Millisecond) // simulated: a reply arriving in two segments
				_, _ = c.Write(msg[len(msg)/2:])
			} else {
				_, _ = c.Write(msg)
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *echoServer) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.got...)
}

func (s *echoServer) acceptedConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// msg returns an LDAP-framed message with a body of n bytes of b.
func msg(b byte, n int) []byte {
	body := bytes.Repeat([]byte{b}, n)
	switch {
	case n < 0x80:
		return append([]byte{0x30, byte(n)}, body...)
	case n < 0x100:
		return append([]byte{0x30, 0x81, byte(n)}, body...)
	}
	return append([]byte{0x30, 0x82, byte(n >> 8), byte(n)}, body...)
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readMsg reads one framed message within d, or returns nil on timeout.
func readMsg(t *testing.T, c net.Conn, d time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var got []byte
	buf := make([]byte, 4096)
	for {
		if size, err := FrameLen(got); err != nil {
			t.Fatalf("not a message: %x", got)
		} else if size > 0 {
			if size != len(got) {
				t.Fatalf("%d bytes after the message", len(got)-size)
			}
			return got
		}
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if len(got) > 0 {
				t.Fatalf("a partial message: %x", got)
			}
			return nil
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

func write(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestPass(t *testing.T) {
	srv := newEchoServer(t)
	p := newProxy(t, srv.ln.Addr().String())
	if !strings.HasPrefix(p.URL(), "ldap://127.0.0.1:") {
		t.Fatalf("URL %q", p.URL())
	}
	c := dial(t, p)
	for i, m := range [][]byte{msg('a', 3), msg('b', 200), msg('c', 1000)} {
		write(t, c, m)
		if got := readMsg(t, c, keeltest.WaitBound); !bytes.Equal(got, m) {
			t.Fatalf("message %d: got %x", i, got)
		}
	}
	if p.Passed() != 3 || p.Dropped() != 0 {
		t.Fatalf("passed %d dropped %d", p.Passed(), p.Dropped())
	}
}

func TestSplitRepliesAndBatchedRequests(t *testing.T) {
	srv := newEchoServer(t)
	srv.split = true
	p := newProxy(t, srv.ln.Addr().String())
	c := dial(t, p)
	// Two requests in one write; each reply arrives in two segments.
	a, b := msg('a', 300), msg('b', 5)
	write(t, c, append(append([]byte(nil), a...), b...))
	if got := readMsg(t, c, keeltest.WaitBound); !bytes.Equal(got, a) {
		t.Fatalf("first reply %x", got)
	}
	if got := readMsg(t, c, keeltest.WaitBound); !bytes.Equal(got, b) {
		t.Fatalf("second reply %x", got)
	}
}

func TestDropRepliesAfter(t *testing.T) {
	srv := newEchoServer(t)
	p := newProxy(t, srv.ln.Addr().String())
	p.DropRepliesAfter(1)
	if m, n := p.Mode(); m != ModeDropReplies || n != 1 || m.String() != "drop-replies" {
		t.Fatalf("mode %v %d", m, n)
	}
	c := dial(t, p)
	first, second, third := msg('1', 4), msg('2', 150), msg('3', 4)
	write(t, c, first)
	if got := readMsg(t, c, keeltest.WaitBound); !bytes.Equal(got, first) {
		t.Fatalf("the first reply is not forwarded: %x", got)
	}
	write(t, c, second)
	keeltest.Until(t, "the server gets the second request", func() bool { return len(srv.received()) == 2 })
	keeltest.Until(t, "the second reply is dropped", func() bool { return p.Dropped() == 1 })
	// Back to pass: the stream goes on, without the dropped reply (the
	// next reply read is the third's, not the second's).
	p.Pass()
	write(t, c, third)
	if got := readMsg(t, c, keeltest.WaitBound); !bytes.Equal(got, third) {
		t.Fatalf("after Pass: %x, want the third reply (the second one dropped)", got)
	}
	// A new connection counts from its own start.
	p.DropRepliesAfter(1)
	c2 := dial(t, p)
	write(t, c2, first)
	if got := readMsg(t, c2, keeltest.WaitBound); !bytes.Equal(got, first) {
		t.Fatalf("a new connection's first reply: %x", got)
	}
	// The old connection is past its first message: dropped at once.
	write(t, c, third)
	keeltest.Until(t, "the old connection's reply is dropped", func() bool { return p.Dropped() == 2 })
	// N = 0 drops every reply.
	p.DropRepliesAfter(0)
	c3 := dial(t, p)
	write(t, c3, first)
	keeltest.Until(t, "the reply to N=0 is dropped", func() bool { return p.Dropped() == 3 })
	p.Pass()
	write(t, c3, third)
	if got := readMsg(t, c3, keeltest.WaitBound); !bytes.Equal(got, third) {
		t.Fatalf("after N=0 and Pass: %x, want the third reply (the first one dropped)", got)
	}
}

func TestBlackHole(t *testing.T) {
	srv := newEchoServer(t)
	p := newProxy(t, srv.ln.Addr().String())
	open := dial(t, p)
	write(t, open, msg('a', 2))
	if readMsg(t, open, keeltest.WaitBound) == nil {
		t.Fatal("no reply in pass mode")
	}
	p.BlackHole()
	write(t, open, msg('b', 2))
	accepted, proxied := srv.acceptedConns(), p.Accepted()
	fresh := dial(t, p) // accepted, never connected to the server
	write(t, fresh, msg('c', 2))
	keeltest.Until(t, "both connections open", func() bool { return p.Conns() == 2 })
	if n := p.Accepted() - proxied; n != 1 {
		t.Fatalf("the proxy accepted %d connections, want 1", n)
	}
	// b and c are read, and dropped, before the mode changes (a loaded
	// machine may not have let the proxy read them yet).
	keeltest.Until(t, "the black hole swallowed b and c", func() bool { return p.Swallowed() == 2*len(msg('b', 2)) })
	p.Pass()
	// The black-holed connection has no server side: Pass closed it,
	// and it got no reply before (a Read would return it, not the end).
	// The end is EOF, or a reset when the proxy closed it before reading
	// what the client sent (which a loaded machine can delay).
	_ = fresh.SetReadDeadline(time.Now().Add(keeltest.WaitBound))
	if n, err := fresh.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the black-holed connection after Pass: %d bytes, %v; want EOF or a reset", n, err)
	}
	// The other one works again (its request of the black hole is lost):
	// the next reply read is d's, not b's.
	write(t, open, msg('d', 2))
	if got := readMsg(t, open, keeltest.WaitBound); !bytes.Equal(got, msg('d', 2)) {
		t.Fatalf("after Pass: %x, want d's reply", got)
	}
	if n := len(srv.received()); n != 2 {
		t.Fatalf("the server got %d messages, want 2 (a and d): a request of the black hole went through", n)
	}
	if srv.acceptedConns() != accepted {
		t.Fatal("a connection accepted in black-hole mode reached the server")
	}
}

func TestCloseAllAndClose(t *testing.T) {
	srv := newEchoServer(t)
	p, err := New(srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, b := dial(t, p), dial(t, p)
	for _, c := range []net.Conn{a, b} {
		write(t, c, msg('x', 1))
		readMsg(t, c, keeltest.WaitBound)
	}
	p.CloseAll()
	for _, c := range []net.Conn{a, b} {
		_ = c.SetReadDeadline(time.Now().Add(keeltest.WaitBound))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("after CloseAll: %v, want EOF", err)
		}
	}
	keeltest.Until(t, "no connection left", func() bool { return p.Conns() == 0 })
	// Still accepting.
	c := dial(t, p)
	write(t, c, msg('y', 1))
	if readMsg(t, c, keeltest.WaitBound) == nil {
		t.Fatal("no reply after CloseAll")
	}
	// Close ends the listener, the connections and the goroutines.
	p.BlackHole()
	hole := dial(t, p)
	write(t, hole, msg('z', 1))
	keeltest.Until(t, "two connections", func() bool { return p.Conns() == 2 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, c := range []net.Conn{c, hole} {
		// EOF, or a reset for hole when the proxy closed it before
		// reading what it sent (which a loaded machine can delay).
		_ = c.SetReadDeadline(time.Now().Add(keeltest.WaitBound))
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("after Close: %d bytes, %v; want EOF or a reset", n, err)
		}
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("the proxy accepts after Close")
	}
}

func TestServerDownAndRawStream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	p := newProxy(t, target)
	c := dial(t, p)
	_ = c.SetReadDeadline(time.Now().Add(keeltest.WaitBound))
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("a connection to a server that is down: %v, want it closed", err)
	}

	// A server that does not speak LDAP framing is forwarded as is.
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s, err := raw.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_, _ = s.Write([]byte("hello, not BER"))
		_, _ = io.Copy(io.Discard, s)
	}()
	t.Cleanup(func() { raw.Close(); wg.Wait() })
	p2 := newProxy(t, raw.Addr().String())
	p2.DropRepliesAfter(0)
	c2 := dial(t, p2)
	_ = c2.SetReadDeadline(time.Now().Add(keeltest.WaitBound))
	got := make([]byte, len("hello, not BER"))
	if _, err := io.ReadFull(c2, got); err != nil || string(got) != "hello, not BER" {
		t.Fatalf("raw stream: %q %v", got, err)
	}
	c2.Close()
}
