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
// is the program's), with -max-inflight-bytes at 64 MiB, over a bbolt file
// and over the memory store, and sends it 16 concurrent chunked writes of
// 30 MiB secrets (no Content-Length: each reserves what a body of its
// route's cap costs, bodyCopies times 32 MiB, lowered to the whole bound:
// they queue, and run one at a time); over the file, it then restarts the
// server, which knows of the values only what the store holds, and sends
// 16 concurrent reads of them. Every write answers 204, every read 200
// (after a 503 with Retry-After at most, which the client follows), every
// value reads back whole, and the peak RSS of each phase's process, idle
// process included, stays under twice the bound plus the values stored.
// The values are in the figure as the heap of the memory store, and as
// the pages of the file that the reads touch. Each read reserves its
// value's size twice (the stored JSON and the decoded data) before it
// loads it, so that two reads of 30 MiB never run together.
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
		clients   = 16
		valueSize = 30 << 20
		token     = "root-t" // the one process.do sends
		bound     = 64 << 20
		stored    = clients * valueSize
		limit     = 2*bound + stored
	)
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	client := &http.Client{Timeout: 2 * time.Minute}
	// do sends the request made by newReq, again after Retry-After for as
	// long as it answers 503; it returns the final response (its body to
	// be read and closed by the caller) and how many 503s came before.
	do := func(newReq func() *http.Request) (resp *http.Response, retries int, err error) {
		for ; ; retries++ {
			resp, err = client.Do(newReq())
			if err != nil {
				return nil, retries, err
			}
			if resp.StatusCode != http.StatusServiceUnavailable || retries == 60 {
				return resp, retries, nil
			}
			secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || secs < 1 {
				return nil, retries, fmt.Errorf("503 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
			time.Sleep(time.Duration(secs) * time.Second)
		}
	}
	letter := func(i int) byte { return 'A' + byte(i) } // no letter of the envelope's
	path := func(i int) string { return fmt.Sprintf("/v1/secret/big/%02d", i) }
	// overIdle logs the peak RSS of srv over its idle RSS, and checks
	// the peak RSS, idle RSS included, against the limit.
	overIdle := func(t *testing.T, phase string, srv *process, idle int64, retried int, stop func() (anon, file int64)) {
		t.Helper()
		hwm := srv.peakRSS(t)
		anon, file := stop()
		t.Logf("%s: %d answers 503 before the last; peak RSS %d MiB, %d MiB over idle (idle %d MiB, bound %d MiB, values %d MiB, limit %d MiB; sampled peaks: heap %d MiB, file pages %d MiB)",
			phase, retried, hwm>>20, (hwm-idle)>>20, idle>>20, bound>>20, stored>>20, limit>>20, anon>>20, file>>20)
		if hwm >= limit {
			t.Errorf("%s: peak RSS %d MiB, want under %d MiB (twice the bound plus the values)", phase, hwm>>20, limit>>20)
		}
	}

	for _, store := range []string{"bbolt", "memory"} {
		t.Run("store="+store, func(t *testing.T) {
			data := memoryData
			if store == "bbolt" {
				data = filepath.Join(t.TempDir(), "keel.db")
			}
			args := []string{"-addr", "127.0.0.1:0", "-data", data, "-root-token", token, "-max-inflight-bytes", strconv.Itoa(bound)}
			srv := startProcess(t, nil, bin, args...)
			idle := srv.peakRSS(t)
			stop := srv.sampleRSS(t)

			var wg sync.WaitGroup
			errs := make([]error, clients)
			var mu sync.Mutex
			retried := 0
			for i := range clients {
				wg.Go(func() {
					resp, retries, err := do(func() *http.Request {
						body := io.MultiReader(strings.NewReader(`{"v":"`), &repeatReader{b: letter(i), n: valueSize}, strings.NewReader(`"}`))
						req, _ := http.NewRequest(http.MethodPut, srv.url+path(i), io.NopCloser(body)) // no length known
						req.Header.Set("X-Vault-Token", token)
						return req
					})
					mu.Lock()
					retried += retries
					mu.Unlock()
					if err != nil {
						errs[i] = fmt.Errorf("write %d: %v", i, err)
						return
					}
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						errs[i] = fmt.Errorf("write %d: %d %s, want 204: the writes queue for their reservation", i, resp.StatusCode, msg)
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			overIdle(t, "chunked writes", srv, idle, retried, stop)
			if store != "bbolt" {
				return // nothing to read after a restart
			}

			srv.kill()
			srv = startProcess(t, nil, bin, args...)
			idle = srv.peakRSS(t)
			stop = srv.sampleRSS(t)
			retried = 0
			for i := range clients {
				wg.Go(func() {
					resp, retries, err := do(func() *http.Request {
						req, _ := http.NewRequest(http.MethodGet, srv.url+path(i), nil)
						req.Header.Set("X-Vault-Token", token)
						return req
					})
					mu.Lock()
					retried += retries
					mu.Unlock()
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
			overIdle(t, "reads after a restart", srv, idle, retried, stop)
		})
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

// sampleRSS samples the process's resident anonymous memory (RssAnon: the
// heap, mostly) and file pages (RssFile: bbolt's map of its file) every
// 10ms until the function it returns is called, which returns the largest
// of each seen.
func (p *process) sampleRSS(t *testing.T) (stop func() (anon, file int64)) {
	done := make(chan struct{})
	var anon, file int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
			if err != nil {
				return
			}
			for line := range strings.SplitSeq(string(b), "\n") {
				for name, peak := range map[string]*int64{"RssAnon:": &anon, "RssFile:": &file} {
					if v, ok := strings.CutPrefix(line, name); ok {
						kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
						*peak = max(*peak, kb<<10)
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return anon, file
	}
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
