package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowAnonymousPut opens a connection that announces a body of size bytes
// to PUT path with no token and sends one byte every gap until the server
// closes the connection or stop is closed; it returns when it ends, with
// the status line the server answered ("" when it only closed).
func slowAnonymousPut(t *testing.T, addr, path string, size int, gap time.Duration, stop <-chan struct{}) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, size)
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		answered <- strings.TrimSpace(line)
	}()
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for {
		select {
		case line := <-answered:
			return line
		case <-stop:
			return ""
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				return <-answered
			}
		}
	}
}

// slowBodyFor is how long TestSlowAnonymousBodiesDoNotStallTheServer keeps
// its slow connections up: by default just past bodyGrace; the issue's
// must-show is -slowbody.for=60s.
var slowBodyFor = flag.Duration("slowbody.for", 0, "keep the slow anonymous uploads of TestSlowAnonymousBodiesDoNotStallTheServer up this long, a new connection each 30s and for each one cut off")

// TestSlowAnonymousBodiesDoNotStallTheServer: anonymous connections that
// announce a 32 MiB body and trickle it hold only the anonymous budget,
// never the authenticated callers' (which they made the server read-only
// with), and are cut off after bodyGrace once they fall below minBodyRate;
// meanwhile the root token's small writes and organization creates all
// answer 2xx, none waiting as long as a request that finds no room
// (inflightWait). With -slowbody.for, the slow connections are kept up
// that long: two at any time, and a new one every 30 s.
func TestSlowAnonymousBodiesDoNotStallTheServer(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", "root-t")
	addr := strings.TrimPrefix(ts.url, "http://")
	stop := make(chan struct{})
	cut := make(chan string, 64)
	begun := time.Now()
	hog := func() { cut <- slowAnonymousPut(t, addr, "/v1/secret/hog", 32<<20, 300*time.Millisecond, stop) }
	for range 2 {
		go hog()
	}
	defer close(stop)
	var slowest time.Duration
	opened, lastOpen, cuts := 2, time.Now(), 0
	for i := 0; time.Since(begun) < max(bodyGrace+time.Second, *slowBodyFor); i++ {
		t0 := time.Now()
		if got := ts.do("PUT", fmt.Sprintf("/v1/secret/legit%d", i), `{"v":"small"}`); got != http.StatusNoContent {
			t.Fatalf("root's write %d during the slow uploads: %d", i, got)
		}
		slowest = max(slowest, time.Since(t0))
		if *slowBodyFor == 0 {
			continue
		}
		select {
		case <-cut: // one was cut off: another takes its place
			cuts++
			opened++
			go hog()
		default:
		}
		if time.Since(lastOpen) >= 30*time.Second {
			opened, lastOpen = opened+1, time.Now()
			go hog()
		}
	}
	if slowest >= inflightWait {
		t.Errorf("root's slowest write took %v, as long as a request that finds no room waits", slowest)
	}
	if *slowBodyFor > 0 {
		t.Logf("%v of slow uploads: %d anonymous connections opened, %d cut off", *slowBodyFor, opened, cuts)
	}
	if got := ts.do("POST", "/api/v2/organizations", `{"data":{"type":"organizations","attributes":{"name":"acme","email":"ops@acme.test"}}}`); got != http.StatusCreated {
		t.Fatalf("root's organization create during the slow uploads: %d", got)
	}
	t.Logf("slowest root write during the slow uploads: %v", slowest)
	// Each slow upload is cut off, not kept until the read timeout.
	for range opened - cuts {
		select {
		case line := <-cut:
			t.Logf("slow upload ended %v after it began: %q", time.Since(begun), line)
		case <-time.After(readTimeout):
			t.Fatalf("a body trickling below %d B/s was not cut off within the read timeout (%v)", minBodyRate, readTimeout)
		}
	}
}

// TestBodyOverTheRouteCap: a body announced beyond what its route reads is
// refused at once (413), reserving nothing: 2 MiB to a JSON:API path,
// whose documents are at most 1 MiB.
func TestBodyOverTheRouteCap(t *testing.T) {
	ts := start(t, hooks{}, "-data", "memory", "-root-token", "root-t")
	req, err := http.NewRequest("POST", ts.url+"/api/v2/organizations", strings.NewReader(strings.Repeat(" ", 2<<20)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer root-t")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB to a JSON:API path: %d, want 413", resp.StatusCode)
	}
}
