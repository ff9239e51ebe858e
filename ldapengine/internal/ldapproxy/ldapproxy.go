// Package ldapproxy is a TCP proxy for tests that stands between an LDAP
// client and an LDAP server and simulates network faults: it forwards
// everything (Pass), swallows everything (BlackHole), or forwards the
// client's requests but drops the server's replies after the Nth LDAP
// message of each connection (DropRepliesAfter), so that a change reaches
// the server and is applied while its answer is lost. CloseAll resets
// every open connection. Modes switch at any time and apply to open
// connections at once.
//
// The server's replies are cut into LDAP messages by their BER envelope
// (a SEQUENCE, tag 0x30, with a definite length in short or long form), so
// that a reply is always dropped or forwarded whole and the stream stays
// valid LDAP when the mode changes. A connection whose server bytes are not
// such messages (StartTLS, LDAPS) is forwarded as a raw byte stream: Pass
// and BlackHole work on it, DropRepliesAfter counts nothing there and
// forwards it.
package ldapproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with the traffic.
type Mode int

// The modes.
const (
	// ModePass forwards everything both ways.
	ModePass Mode = iota
	// ModeBlackHole accepts connections and reads both sides but forwards
	// nothing either way. A connection accepted in this mode is not
	// connected to the server at all: leaving the mode closes it. Bytes
	// read from the client in this mode are gone, so a request sent in
	// it never reaches the server.
	ModeBlackHole
	// ModeDropReplies forwards the client's bytes; of the server's
	// replies, the first N LDAP messages of each connection are forwarded
	// and every later one is dropped.
	ModeDropReplies
)

func (m Mode) String() string {
	switch m {
	case ModePass:
		return "pass"
	case ModeBlackHole:
		return "black-hole"
	case ModeDropReplies:
		return "drop-replies"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy is a running proxy. Create one with New; Close stops it and every
// goroutine it started. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	mode      Mode
	n         int // messages forwarded per connection in ModeDropReplies
	conns     map[*conn]struct{}
	closed    bool
	dropped   int // server messages dropped
	passed    int // server messages forwarded
	accepted  int // client connections accepted
	swallowed int // client bytes read and dropped while black-holing

	wg sync.WaitGroup
}

// conn is one client connection and its server side.
type conn struct {
	client net.Conn
	server net.Conn // nil when accepted in ModeBlackHole
	once   sync.Once
}

func (c *conn) close() {
	c.once.Do(func() {
		c.client.Close()
		if c.server != nil {
			c.server.Close()
		}
	})
}

// New starts a proxy on a free port of 127.0.0.1 that forwards to target
// (host:port), in ModePass.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ldapproxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[*conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's address, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns ldap://ADDR.
func (p *Proxy) URL() string { return "ldap://" + p.Addr() }

// Mode returns the current mode and, for ModeDropReplies, N.
func (p *Proxy) Mode() (Mode, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.n
}

// Pass forwards everything from now on. Connections accepted while
// black-holing, which have no server side, are closed.
func (p *Proxy) Pass() { p.setMode(ModePass, 0) }

// BlackHole forwards nothing from now on, either way; new connections are
// accepted and read but never reach the server.
func (p *Proxy) BlackHole() { p.setMode(ModeBlackHole, 0) }

// DropRepliesAfter forwards the client's bytes, and from each connection's
// server replies (counted from the connection's start, also before this
// call) forwards the first n LDAP messages and drops every later one. With
// n = 1 a bind is answered and the next request, sent and applied, gets no
// answer. A negative n counts as 0.
func (p *Proxy) DropRepliesAfter(n int) { p.setMode(ModeDropReplies, max(n, 0)) }

func (p *Proxy) setMode(m Mode, n int) {
	p.mu.Lock()
	p.mode, p.n = m, n
	var orphans []*conn
	if m != ModeBlackHole {
		for c := range p.conns {
			if c.server == nil {
				orphans = append(orphans, c)
			}
		}
	}
	p.mu.Unlock()
	for _, c := range orphans {
		c.close()
	}
}

// CloseAll closes every open connection, both sides (the client sees its
// connection closed, as after a reset); the proxy keeps accepting.
func (p *Proxy) CloseAll() {
	p.mu.Lock()
	all := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		c.close()
	}
}

// Conns returns how many connections are open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Dropped returns how many server messages ModeDropReplies has dropped
// since New.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Passed returns how many whole server messages were forwarded since New
// (raw streams not counted).
func (p *Proxy) Passed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passed
}

// Swallowed returns how many bytes the proxy read from clients and
// dropped while black-holing, since New: a test waits for it to know that
// a request sent in ModeBlackHole is gone before it leaves the mode.
func (p *Proxy) Swallowed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.swallowed
}

// Accepted returns how many client connections the proxy accepted since
// New, in any mode, also those it closed at once because the server was
// down.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Close stops accepting, closes every connection and waits for all the
// proxy's goroutines to end. It may be called more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CloseAll()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient accept error (EMFILE, aborted handshake)
		}
		p.mu.Lock()
		mode := p.mode
		p.accepted++
		p.mu.Unlock()
		c := &conn{client: client}
		if mode != ModeBlackHole {
			server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				client.Close() // the server is down: the client sees a reset
				continue
			}
			c.server = server
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close()
			return
		}
		p.conns[c] = struct{}{}
		if c.server == nil {
			// Black-holed from the start: only the client is read.
			p.wg.Add(1)
		} else {
			p.wg.Add(2)
			go p.serverToClient(c)
		}
		p.mu.Unlock()
		go p.clientToServer(c)
	}
}

func (p *Proxy) forget(c *conn) {
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// clientToServer copies the client's bytes to the server, or drops them
// while black-holing.
func (p *Proxy) clientToServer(c *conn) {
	defer p.wg.Done()
	defer p.forget(c)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hole := p.mode == ModeBlackHole
			if hole {
				p.swallowed += n
			}
			p.mu.Unlock()
			if !hole && c.server != nil {
				if _, werr := c.server.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// serverToClient cuts the server's bytes into LDAP messages and forwards
// or drops each by the mode at the time it is complete.
func (p *Proxy) serverToClient(c *conn) {
	defer p.wg.Done()
	defer p.forget(c)
	var pending []byte
	raw := false
	count := 0 // server messages of this connection so far
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		pending = append(pending, buf[:n]...)
		for len(pending) > 0 {
			if raw {
				if !p.forwardRaw(c, pending) {
					return
				}
				pending = pending[:0]
				break
			}
			size, ferr := FrameLen(pending)
			if ferr != nil {
				raw = true
				continue
			}
			if size == 0 {
				break // incomplete: read more
			}
			msg := pending[:size]
			if !p.forwardMessage(c, msg, count) {
				return
			}
			count++
			pending = pending[size:]
		}
		if len(pending) == 0 {
			pending = nil // let a large drained buffer go
		}
		if err != nil {
			return
		}
	}
}

// forwardMessage sends the index-th server message msg of c to the client
// unless the mode drops it; it returns false when the client is gone.
func (p *Proxy) forwardMessage(c *conn, msg []byte, index int) bool {
	p.mu.Lock()
	drop := p.mode == ModeBlackHole || (p.mode == ModeDropReplies && index >= p.n)
	if drop && p.mode == ModeDropReplies {
		p.dropped++
	} else if !drop {
		p.passed++
	}
	p.mu.Unlock()
	if drop {
		return true
	}
	_, err := c.client.Write(msg)
	return err == nil
}

// forwardRaw sends b, bytes of a stream that is not framed, unless
// black-holing.
func (p *Proxy) forwardRaw(c *conn, b []byte) bool {
	p.mu.Lock()
	hole := p.mode == ModeBlackHole
	p.mu.Unlock()
	if hole {
		return true
	}
	_, err := c.client.Write(b)
	return err == nil
}

// MaxMessage is the largest LDAP message FrameLen accepts (64 MiB); a
// longer one is not taken for LDAP.
const MaxMessage = 64 << 20

// ErrNotLDAP is returned by FrameLen for bytes that do not start an LDAP
// message.
var ErrNotLDAP = errors.New("ldapproxy: not an LDAP message")

// FrameLen returns the size in bytes of the LDAP message (a BER SEQUENCE:
// tag 0x30, then a definite length in short form, one byte below 0x80, or
// long form, 0x80|k followed by k big-endian bytes, k from 1 to 4) at the
// start of b, header included; 0 when b holds only part of it. Bytes that
// cannot start an LDAP message (another tag, the indefinite length 0x80, a
// length of more than 4 bytes or above MaxMessage) give ErrNotLDAP.
func FrameLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if b[0] != 0x30 {
		return 0, fmt.Errorf("%w: tag 0x%02x", ErrNotLDAP, b[0])
	}
	if len(b) < 2 {
		return 0, nil
	}
	l := int(b[1])
	hdr := 2
	if l&0x80 != 0 {
		k := l & 0x7f
		if k == 0 || k > 4 {
			return 0, fmt.Errorf("%w: length byte 0x%02x", ErrNotLDAP, b[1])
		}
		if len(b) < 2+k {
			return 0, nil
		}
		l = 0
		for _, x := range b[2 : 2+k] {
			l = l<<8 | int(x)
		}
		hdr += k
	}
	if l > MaxMessage {
		return 0, fmt.Errorf("%w: length %d", ErrNotLDAP, l)
	}
	if len(b) < hdr+l {
		return 0, nil
	}
	return hdr + l, nil
}
