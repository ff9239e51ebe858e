package slapdtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/keeltest"
)

// A test binary killed with SIGKILL (a timeout, a CI runner giving up)
// leaves no slapd running: the child is killed with its parent.
func TestSlapdDiesWithTestProcess(t *testing.T) {
	if os.Getenv("SLAPDTEST_CHILD") == "1" {
		s := Start(t)
		fmt.Printf("pid %d\n", s.cmd.Process.Pid)
		time.Sleep(2 * keeltest.WaitBound) // the test process that hangs: killed by the parent long before
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("the kernel kills children with their parent only on Linux")
	}
	if _, err := os.Stat(slapdBin); err != nil {
		t.Skipf("slapd is not installed (%v)", err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSlapdDiesWithTestProcess$", "-test.v")
	child.Env = append(os.Environ(), "SLAPDTEST_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	sc := bufio.NewScanner(out)
	for pid == 0 && sc.Scan() {
		if n, ok := parsePID(sc.Text()); ok {
			pid = n
		}
	}
	if pid == 0 {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the child printed no slapd pid (%v)", sc.Err())
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("slapd %d is not running while the child lives: %v", pid, err)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	keeltest.Until(t, fmt.Sprintf("slapd %d ends with its killed test process", pid), func() bool {
		// slapd was the child's child: once killed it is reparented and
		// reaped by init (or a subreaper), after which kill(pid, 0) fails.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || zombie(pid)
	})
}

func parsePID(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, "pid ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// zombie reports whether pid has died and waits for a reaper.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}
