package slapdtest

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/keelhq/keel/internal/keeltest"
)

// bindWithin binds as dn over TCP with a request timeout of d.
func bindWithin(s *Server, dn, pw string, d time.Duration) error {
	c, err := ldap.DialURL(s.URL, ldap.DialWithDialer(&net.Dialer{Timeout: d}))
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetTimeout(d)
	return c.Bind(dn, pw)
}

// state returns the process state letter of pid ("" when the process is
// gone).
func state(pid int) string {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return ""
	}
	st, ok := procState(pid)
	if !ok {
		return ""
	}
	return string(st)
}

func TestPauseResume(t *testing.T) {
	s := Start(t)
	pid := s.Pid()
	// The baseline: the slowest of a few binds to the running slapd on
	// this machine under its present load; the bound on the failed bind
	// gets a slack derived from it.
	var baseline time.Duration
	for range 3 {
		start := time.Now()
		if err := bindWithin(s, AliceDN, AlicePW, keeltest.WaitBound); err != nil {
			t.Fatalf("bind to the running slapd: %v", err)
		}
		baseline = max(baseline, time.Since(start))
	}
	s.Pause()
	s.Pause() // idempotent
	if st := state(pid); st != "T" {
		t.Fatalf("paused slapd in state %q, want T (stopped)", st)
	}
	start := time.Now()
	err := bindWithin(s, AliceDN, AlicePW, 300*time.Millisecond)
	if err == nil {
		t.Fatal("a paused slapd answered a bind")
	}
	if d, limit := time.Since(start), 300*time.Millisecond+time.Second+20*baseline; d > limit {
		t.Fatalf("the bind failed only after %s, want within %s (its timeout, and a slack from the baseline %s)", d, limit, baseline)
	}
	s.Resume()
	s.Resume() // idempotent
	if err := bindWithin(s, AliceDN, AlicePW, keeltest.WaitBound); err != nil {
		t.Fatalf("bind after Resume: %v", err)
	}
}

func TestKillRestartKeepsPortAndData(t *testing.T) {
	s := Start(t)
	url, pid := s.URL, s.Pid()
	admin, err := ldap.DialURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Bind(AdminDN, AdminPW); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PasswordModify(ldap.NewPasswordModifyRequest(AliceDN, "", "changed-pw")); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	s.Pause() // Kill also ends a paused slapd
	s.Kill()
	if st := state(pid); st != "" {
		t.Fatalf("killed slapd still there (state %q)", st)
	}
	if s.Pid() != 0 {
		t.Fatal("Pid after Kill is not 0")
	}
	s.Kill() // does nothing
	if err := bindWithin(s, AliceDN, "changed-pw", time.Second); err == nil {
		t.Fatal("a killed slapd answered")
	}
	s.Restart()
	if s.URL != url {
		t.Fatalf("URL changed from %s to %s", url, s.URL)
	}
	if err := bindWithin(s, AliceDN, "changed-pw", keeltest.WaitBound); err != nil {
		t.Fatalf("the password changed before the kill does not bind after Restart: %v", err)
	}
}

// Cleanup (Stop) never leaves a stopped slapd behind.
func TestCleanupResumesAndStopsPaused(t *testing.T) {
	var pid int
	t.Run("paused at the end", func(t *testing.T) {
		s := Start(t)
		pid = s.Pid()
		s.Pause()
	})
	if pid == 0 {
		t.Skip("no slapd started: Start skipped the subtest (slapd is not installed)")
	}
	if st := state(pid); st != "" {
		t.Fatalf("slapd %d left in state %q after cleanup", pid, st)
	}
}
