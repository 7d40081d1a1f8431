package serving

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testLimits are generous limits; each test narrows the one it proves.
func testLimits() Limits {
	return Limits{
		ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute, HandlerTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: time.Minute,
		MaxInFlight: 4, MaxBodyBytes: 1 << 20, MaxBufferedBytes: 4 << 20,
	}
}

// serve runs h behind NewServer on 127.0.0.1 and returns its address and
// the limiter, for tests that watch its budget.
func serve(t *testing.T, h http.Handler, l Limits) (string, *limiter) {
	t.Helper()
	srv, err := NewServer("test", h, l)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("server stopped with %v", err)
		}
	})
	return ln.Addr().String(), srv.Handler.(*limiter)
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})

// get sends a plain GET and returns the status.
func get(t *testing.T, addr string) int {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// trickle is a slow client: it writes head at once, then one byte of tail
// every 20 ms, and reports on closed when the server ends the connection
// (or answers: the answer is sent on answers).
type trickle struct {
	conn    net.Conn
	closed  chan struct{}
	answers chan string
}

func startTrickle(t *testing.T, addr, head, tail string) *trickle {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &trickle{conn: conn, closed: make(chan struct{}), answers: make(chan string, 1)}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(tr.closed)
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err == nil {
			tr.answers <- strings.TrimSpace(line)
		}
	}()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < len(tail); i++ {
			select {
			case <-tr.closed:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{tail[i]}); err != nil {
				return
			}
		}
	}()
	return tr
}

// endless is more header or body than a trickle sends in a test's life.
var endless = strings.Repeat("a", 100000)

// TestSlowlorisDisconnected: a client trickling its headers one
// byte at a time is disconnected after ReadHeaderTimeout, and one trickling
// its body is answered 408 after ReadTimeout, although each would go on for
// half an hour.
func TestSlowlorisDisconnected(t *testing.T) {
	l := testLimits()
	l.ReadHeaderTimeout, l.ReadTimeout = 300*time.Millisecond, 600*time.Millisecond
	addr, _ := serve(t, okHandler, l)

	headers := startTrickle(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ", endless)
	body := startTrickle(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", endless)
	for name, tr := range map[string]*trickle{"headers": headers, "body": body} {
		select {
		case <-tr.closed:
		case <-time.After(20 * time.Second):
			t.Fatalf("slow %s: still connected after 20 s", name)
		}
	}
	select {
	case got := <-body.answers:
		if got != "HTTP/1.1 408 Request Timeout" {
			t.Errorf("slow body answered %q, want 408", got)
		}
	default:
		t.Error("slow body: connection closed without an answer, want 408")
	}
	select {
	case got := <-headers.answers:
		t.Errorf("slow headers answered %q, want the connection closed", got)
	default:
	}
}

// TestSlowClientsDoNotStarve: with every slot's worth of
// clients trickling headers and bodies (and then some), ordinary requests
// are still served: slow clients hold no slot.
func TestSlowClientsDoNotStarve(t *testing.T) {
	l := testLimits()
	l.MaxInFlight = 2
	addr, lim := serve(t, okHandler, l)
	for range 3 * l.MaxInFlight {
		startTrickle(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ", endless)
		startTrickle(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", endless)
	}
	for i := range 5 {
		if code := get(t, addr); code != http.StatusOK {
			t.Fatalf("request %d beside slow clients: %d, want 200", i, code)
		}
	}
	if n := len(lim.slots); n != 0 {
		t.Errorf("%d slots held by slow clients, want 0", n)
	}
}

// TestInFlight: with MaxInFlight requests in their handlers,
// the next is answered 429 with Retry-After at once; a slot freed serves
// the one after.
func TestInFlight(t *testing.T) {
	l := testLimits()
	l.MaxInFlight = 2
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	addr, _ := serve(t, h, l)
	slow := make(chan int, l.MaxInFlight)
	for range l.MaxInFlight {
		go func() {
			resp, err := http.Get("http://" + addr + "/slow")
			if err != nil {
				slow <- 0
				return
			}
			resp.Body.Close()
			slow <- resp.StatusCode
		}()
	}
	for range l.MaxInFlight {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("slow requests did not reach the handler")
		}
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("request over the bound: %d Retry-After %q (%s), want 429 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	close(release)
	for range l.MaxInFlight {
		if code := <-slow; code != http.StatusOK {
			t.Errorf("a request in flight ended %d, want 200", code)
		}
	}
	if code := get(t, addr); code != http.StatusOK {
		t.Errorf("after the slots were freed: %d, want 200", code)
	}
}

// TestHandlerDeadline: a handler's context ends HandlerTimeout
// after its request arrived, and a handler that stops then can still
// answer (WriteTimeout is later).
func TestHandlerDeadline(t *testing.T) {
	l := testLimits()
	l.HandlerTimeout, l.WriteTimeout = 200*time.Millisecond, 30*time.Second
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			WriteError(w, http.StatusServiceUnavailable, r.Context().Err().Error())
		case <-time.After(30 * time.Second):
			_, _ = io.WriteString(w, "no deadline")
		}
	})
	addr, _ := serve(t, h, l)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body))), `503 {"error":"context deadline exceeded"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestBodies: a body over MaxBodyBytes is a 413 (from the
// declared length without reading it, or as it is read); bodies held by
// slow requests fill MaxBufferedBytes and the next body is a 429, while
// requests without a body are still served.
func TestBodies(t *testing.T) {
	l := testLimits()
	l.MaxBodyBytes, l.MaxBufferedBytes = 64<<10, 64<<10
	seen := make(chan int, 10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, isBuffered := Body(r)
		n, _ := io.Copy(io.Discard, r.Body)
		if isBuffered && int64(len(b)) != n {
			t.Errorf("Body gave %d bytes, r.Body %d", len(b), n)
		}
		seen <- int(n)
		_, _ = io.WriteString(w, "ok")
	})
	addr, lim := serve(t, h, l)
	post := func(body io.Reader, length int64) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", body)
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	full := strings.Repeat("x", 64<<10)
	if code := post(strings.NewReader(full), int64(len(full))); code != http.StatusOK || <-seen != len(full) {
		t.Errorf("a body of exactly the limit: %d, want 200", code)
	}
	if code := post(strings.NewReader(full+"x"), int64(len(full))+1); code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared over the limit: %d, want 413", code)
	}
	// No declared length: the limit is found while reading.
	if code := post(io.MultiReader(strings.NewReader(full), strings.NewReader("x")), -1); code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked over the limit: %d, want 413", code)
	}

	// A slow client holds 40000 bytes of its declared 64 KiB...
	startTrickle(t, addr, fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 64<<10, strings.Repeat("y", 40000)), endless)
	deadline := time.Now().Add(30 * time.Second)
	for lim.buffered.Load() < 40000 {
		if time.Now().After(deadline) {
			t.Fatalf("the slow body was not buffered: %d bytes", lim.buffered.Load())
		}
		<-time.After(5 * time.Millisecond)
	}
	// ... so another body finds the buffers full, and a GET is served.
	if code := post(strings.NewReader("small"), 5); code != http.StatusTooManyRequests {
		t.Errorf("a body while the buffers are full: %d, want 429", code)
	}
	if code := get(t, addr); code != http.StatusOK {
		t.Errorf("a GET while the buffers are full: %d, want 200", code)
	}
}

// TestLimitsValidate names each limit that cannot work.
func TestLimitsValidate(t *testing.T) {
	l := Limits{WriteTimeout: time.Second, HandlerTimeout: 2 * time.Second, MaxBodyBytes: 10, MaxBufferedBytes: 5}
	err := l.Validate()
	want := []string{
		"read header timeout must be positive, not 0s",
		"read timeout must be positive, not 0s",
		"idle timeout must be positive, not 0s",
		"write timeout 1s must be more than the handler timeout 2s",
		"max in flight must be at least 1, not 0",
		"max buffered bytes 5 must be at least max body bytes 10",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Validate: %v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if err := testLimits().Validate(); err != nil {
		t.Errorf("valid limits refused: %v", err)
	}
}

// TestBodyBufferSizes: a body of declared length reaches its
// handler in a buffer of exactly that length, reserved once, so the buffer
// budget counts what bodies cost; a chunked one grows to at most the
// limit. The budget is released after every request.
func TestBodyBufferSizes(t *testing.T) {
	l := testLimits()
	type seen struct{ Len, Cap int }
	got := make(chan seen, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := Body(r)
		got <- seen{len(b), cap(b)}
	})
	addr, lim := serve(t, h, l)
	for _, n := range []int{0, 1, 1000, firstBuffer, firstBuffer + 1, 700 << 10, 1 << 20} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(strings.Repeat("x", n))
			length := int64(n)
			if chunked {
				body, length = io.MultiReader(body), -1
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", body)
			req.ContentLength = length
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %d bytes: %v", n, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s := <-got
			want := seen{n, n}
			if chunked {
				// Doubling from 32 KiB, never past the limit.
				c := firstBuffer
				for c < n {
					c = min(2*c, int(l.MaxBodyBytes))
				}
				want.Cap = c
				if n == 0 {
					want.Cap = 0
				}
			}
			if s != want {
				t.Errorf("%d bytes (chunked %v): buffer %+v, want %+v", n, chunked, s, want)
			}
		}
	}
	if b := lim.buffered.Load(); b != 0 {
		t.Errorf("%d bytes still reserved after every request ended", b)
	}
}

// BenchmarkLimitBody is what reading one 7 MiB body (the largest
// admission review) costs the heap behind Limit.
func BenchmarkLimitBody(b *testing.B) {
	l := testLimits()
	l.MaxBodyBytes, l.MaxBufferedBytes = 7<<20, 64<<20
	lim := Limit("bench", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), l)
	body := strings.Repeat("x", 7<<20)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		lim.ServeHTTP(httptest.NewRecorder(), req)
	}
}
