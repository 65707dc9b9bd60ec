package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// stalledAttack runs the stalled-body attack against a proxy with the
// limits abridge serve uses by default (but bodyTimeout): n connections each announce a
// chat completions body of declared bytes, send sent bytes of it, and
// stall. It samples the process's resident memory until every
// connection has its answer, and reports the peak and the answers.
func stalledAttack(n int, declared, sent int64, bodyTimeout time.Duration, stdout io.Writer) error {
	upSrv := httptest.NewServer(&openaitest.Upstream{})
	defer upSrv.Close()
	base, _ := url.Parse(upSrv.URL + "/v1")
	p := proxy.New(proxy.Options{Upstream: base, MaxBodyBytes: declared, BodyTimeout: bodyTimeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second} // as abridge serve
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	before := memoryInUse()
	rssBefore, _ := residentBytes()
	peak := rssBefore
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if r, ok := residentBytes(); ok && r > peak {
					peak = r
				}
			}
		}
	}()

	chunk := bytes.Repeat([]byte(" "), 1<<20) // one buffer for every connection: the client's memory stays small
	head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", declared)
	start := time.Now()
	var (
		mu       sync.Mutex
		statuses = map[string]int{}
		slowest  time.Duration
		wg       sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := attackOne(ln.Addr().String(), head, chunk, sent)
			mu.Lock()
			statuses[status]++
			slowest = max(slowest, time.Since(start))
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(done)
	<-sampled // peak is the sampler's until it has returned
	var answers []string
	for s, c := range statuses {
		answers = append(answers, fmt.Sprintf("%d × %s", c, s))
	}
	slices.Sort(answers)
	fmt.Fprintf(stdout, "stalled-body attack: %d connections, each announcing %d MiB and sending %d MiB of it, against a proxy with abridge serve's limits (body memory %d MiB, body timeout %s)\n",
		n, declared>>20, sent>>20, max(proxy.DefaultBodyMemory, declared)>>20, bodyTimeout)
	fmt.Fprintf(stdout, "answers: %s; the last after %.1f s\n", strings.Join(answers, ", "), slowest.Seconds())
	fmt.Fprintf(stdout, "resident memory: %d MiB before, peak %d MiB (sampled every 50 ms), %d MiB announced in all\n",
		rssBefore>>20, peak>>20, int64(n)*declared>>20)
	fmt.Fprintf(stdout, "before: %s; after: %s\n", before, memoryInUse())
	return nil
}

// attackOne sends one stalled body and returns the status it was
// answered with, or what ended the connection.
func attackOne(addr, head string, chunk []byte, sent int64) string {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "dial error"
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return "write error"
	}
	// Writes block once the proxy stops reading: write in the background
	// and wait for the answer.
	go func() {
		for left := sent; left > 0; {
			k := min(left, int64(len(chunk)))
			if _, err := conn.Write(chunk[:k]); err != nil {
				return
			}
			left -= k
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "no answer (" + err.Error() + ")"
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// memoryInUse reports the heap in use after a collection, and the
// process's resident memory.
func memoryInUse() string {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := fmt.Sprintf("heap in use %d MiB", m.HeapInuse>>20)
	if r, ok := residentBytes(); ok {
		s += fmt.Sprintf(", resident %d MiB", r>>20)
	}
	return s
}

// residentBytes returns the process's resident set size (Linux).
func residentBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
