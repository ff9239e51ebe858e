package ldapproxy

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
)

// Against a real slapd: with DropRepliesAfter(1), a go-ldap bind is
// answered, and the password change sent next is applied by slapd while
// its reply never arrives.
func TestSlapdDropsThePasswordChangeReply(t *testing.T) {
	srv := slapdtest.Start(t)
	p := newProxy(t, strings.TrimPrefix(srv.URL, "ldap://"))
	// connect dials url; the requests, which must be answered, time out
	// after keeltest.WaitBound.
	connect := func(url string) *ldap.Conn {
		t.Helper()
		c, err := ldap.DialURL(url, ldap.DialWithDialer(&net.Dialer{Timeout: keeltest.WaitBound}))
		if err != nil {
			t.Fatal(err)
		}
		c.SetTimeout(keeltest.WaitBound)
		return c
	}
	c := connect(p.URL())
	if err := c.Bind(slapdtest.BindDN, slapdtest.BindPW); err != nil {
		t.Fatalf("bind through the proxy: %v", err)
	}
	c.Close()

	p.DropRepliesAfter(1)
	c = connect(p.URL())
	defer c.Close()
	if err := c.Bind(slapdtest.BindDN, slapdtest.BindPW); err != nil {
		t.Fatalf("bind, the first message, is not answered: %v", err)
	}
	c.SetTimeout(time.Second) // the password change's reply never comes
	start := time.Now()
	_, err := c.PasswordModify(ldap.NewPasswordModifyRequest(slapdtest.AliceDN, "", "new-alice-pw"))
	if err == nil {
		t.Fatal("the password change was answered")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("the password change failed after %s, not by the request timeout: %v", d, err)
	}
	// slapd's reply may come after the client gave up, on a loaded
	// machine: it is awaited.
	keeltest.Until(t, "the proxy drops the reply of the password change", func() bool { return p.Dropped() >= 1 })
	if n := p.Dropped(); n != 1 {
		t.Fatalf("dropped %d replies, want 1", n)
	}
	// slapd applied it: the new password binds directly.
	d := connect(srv.URL)
	defer d.Close()
	if err := d.Bind(slapdtest.AliceDN, "new-alice-pw"); err != nil {
		t.Fatalf("the change was not applied: %v", err)
	}
	if err := d.Bind(slapdtest.AliceDN, slapdtest.AlicePW); !ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
		t.Fatalf("the old password: %v, want invalid credentials", err)
	}
	// Passing again: a new connection works through the proxy.
	p.Pass()
	c2 := connect(p.URL())
	defer c2.Close()
	if err := c2.Bind(slapdtest.AliceDN, "new-alice-pw"); err != nil {
		t.Fatalf("bind after Pass: %v", err)
	}
}
