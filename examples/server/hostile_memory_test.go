package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestInflightMemoryBound starts the server as a process of its own (built
// without the race detector, whatever the test's flags, so that its memory
// is the program's), over the memory store with the default
// -max-inflight-bytes, and sends it 16 concurrent writes of 30 MiB
// secrets, then 16 concurrent reads of them. Every request answers; at
// least 8 writes succeed at the first try, all of them when the client
// waits as Retry-After says; every write reads back whole; and the peak
// RSS of the process (VmHWM), half of which is the stored values, stays
// under 1 GiB.
func TestInflightMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: sends about 1 GiB through a server process")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: the peak RSS is read from /proc/PID/status")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the server with")
	}
	const (
		writers   = 16
		valueSize = 30 << 20
		token     = "memory-test-root"
		maxRSS    = 1 << 30
	)
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := startProcess(t, nil, bin, "-addr", "127.0.0.1:0", "-data", "memory", "-root-token", token)

	client := &http.Client{Timeout: 2 * time.Minute}
	// do sends the request made by newReq, again after Retry-After for as
	// long as it answers 503; it returns the first answer's status and
	// the final response (its body to be read and closed by the caller).
	do := func(newReq func() *http.Request) (first int, resp *http.Response, err error) {
		for try := 0; ; try++ {
			resp, err = client.Do(newReq())
			if err != nil {
				return first, nil, err
			}
			if try == 0 {
				first = resp.StatusCode
			}
			if resp.StatusCode != http.StatusServiceUnavailable || try == 20 {
				return first, resp, nil
			}
			secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || secs < 1 {
				return first, nil, fmt.Errorf("503 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
			time.Sleep(time.Duration(secs) * time.Second)
		}
	}
	letter := func(i int) byte { return 'A' + byte(i) } // no letter of the envelope's
	path := func(i int) string { return fmt.Sprintf("%s/v1/secret/big/%02d", srv.url, i) }

	var wg sync.WaitGroup
	firstOK := make([]bool, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			first, resp, err := do(func() *http.Request {
				body := io.MultiReader(strings.NewReader(`{"v":"`), &repeatReader{b: letter(i), n: valueSize}, strings.NewReader(`"}`))
				req, _ := http.NewRequest(http.MethodPut, path(i), body)
				req.ContentLength = int64(len(`{"v":""}`) + valueSize)
				req.Header.Set("X-Vault-Token", token)
				return req
			})
			if err != nil {
				errs[i] = fmt.Errorf("write %d: %v", i, err)
				return
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			firstOK[i] = first == http.StatusNoContent
			if resp.StatusCode != http.StatusNoContent {
				errs[i] = fmt.Errorf("write %d: %d %s", i, resp.StatusCode, msg)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ok := range firstOK {
		if ok {
			n++
		}
	}
	t.Logf("%d of %d writes succeeded at the first try", n, writers)
	if n < writers/2 {
		t.Errorf("%d of %d writes succeeded at the first try, want at least %d", n, writers, writers/2)
	}

	t.Logf("after the writes: peak RSS %d MiB", srv.peakRSS(t)>>20)
	for i := range writers {
		wg.Go(func() {
			_, resp, err := do(func() *http.Request {
				req, _ := http.NewRequest(http.MethodGet, path(i), nil)
				req.Header.Set("X-Vault-Token", token)
				return req
			})
			if err != nil {
				errs[i] = fmt.Errorf("read %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(resp.Body)
				errs[i] = fmt.Errorf("read %d: %d %s", i, resp.StatusCode, msg)
				return
			}
			if err := checkValue(resp.Body, letter(i), valueSize); err != nil {
				errs[i] = fmt.Errorf("read %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	hwm := srv.peakRSS(t)
	t.Logf("peak RSS %d MiB (stored values: %d MiB)", hwm>>20, writers*valueSize>>20)
	if hwm >= maxRSS {
		t.Errorf("peak RSS %d MiB, want under %d MiB", hwm>>20, maxRSS>>20)
	}
}

// repeatReader reads n bytes b.
type repeatReader struct {
	b     byte
	n     int
	block []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	if r.block == nil {
		r.block = bytes.Repeat([]byte{r.b}, 64<<10)
	}
	n := copy(p[:min(len(p), r.n)], r.block)
	r.n -= n
	return n, nil
}

// checkValue reads a kv read's answer from body without holding it whole:
// data.v must be n bytes b.
func checkValue(body io.Reader, b byte, n int) error {
	br := bufio.NewReaderSize(body, 64<<10)
	const marker = `"data":{"v":"`
	// Find the marker.
	seen := 0
	for seen < len(marker) {
		c, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("no %s in the answer: %v", marker, err)
		}
		switch {
		case c == marker[seen]:
			seen++
		case c == marker[0]:
			seen = 1
		default:
			seen = 0
		}
	}
	buf := make([]byte, 64<<10)
	for left := n; left > 0; {
		k, err := br.Read(buf[:min(len(buf), left)])
		if bytes.IndexFunc(buf[:k], func(r rune) bool { return r != rune(b) }) >= 0 {
			return fmt.Errorf("the value holds another byte than %q", b)
		}
		left -= k
		if err != nil && left > 0 {
			return fmt.Errorf("the value ends %d bytes short: %v", left, err)
		}
	}
	rest, err := io.ReadAll(br)
	if err != nil || !bytes.HasPrefix(rest, []byte(`"}`)) {
		return fmt.Errorf("the value is longer than %d bytes, or the answer is cut: %.40q %v", n, rest, err)
	}
	return nil
}

// peakRSS returns the process's peak resident set size: VmHWM of
// /proc/PID/status.
func (p *process) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}
