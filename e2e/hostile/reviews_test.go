package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/scaleplane/scaleplane/webhooks"
)

// The RackedCluster's resource, whose webhook paths raw reviews are posted
// to.
var rackedGVR = schema.GroupVersionResource{Group: "samples.scaleplane.io", Version: "v1alpha1", Resource: "rackedclusters"}

// reviewResult is what the webhook server answered: the HTTP status, and
// when the body is an AdmissionReview, its response.
type reviewResult struct {
	HTTP       int
	APIVersion string `json:",omitempty"`
	Allowed    bool
	// Code is response.status.code of a refusal.
	Code    int32
	Patched bool
	UID     string
}

// postReview sends body to the webhook server as the API server would,
// with the given method and content type (empty: none), and reads the
// answer.
func (s *suite) postReview(ctx context.Context, method, path, contentType string, body io.Reader) (reviewResult, error) {
	req, err := http.NewRequestWithContext(ctx, method, "https://"+s.bin.webhookAddr+path, body)
	if err != nil {
		return reviewResult{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.webhook.Do(req)
	if err != nil {
		return reviewResult{}, err
	}
	defer resp.Body.Close()
	return readReview(resp)
}

func readReview(resp *http.Response) (reviewResult, error) {
	got := reviewResult{HTTP: resp.StatusCode}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return got, fmt.Errorf("read the answer: %w", err)
	}
	var r struct {
		APIVersion string `json:"apiVersion"`
		Response   *struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Patch   []byte `json:"patch"`
			Status  *struct {
				Code int32 `json:"code"`
			} `json:"status"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &r) == nil && r.Response != nil {
		got.APIVersion = r.APIVersion
		got.Allowed, got.UID, got.Patched = r.Response.Allowed, r.Response.UID, len(r.Response.Patch) > 0
		// controller-runtime stamps 200 on an allowed answer; only a
		// refusal's code says anything.
		if r.Response.Status != nil && !r.Response.Allowed {
			got.Code = r.Response.Status.Code
		}
	}
	return got, nil
}

// review is an AdmissionReview v1 of a RackedCluster as the API server
// sends it. object and oldObject are left out when nil.
func (s *suite) review(uid, op string, object, oldObject any) obj {
	req := obj{
		"uid":       uid,
		"kind":      obj{"group": rackedGVR.Group, "version": rackedGVR.Version, "kind": "RackedCluster"},
		"resource":  obj{"group": rackedGVR.Group, "version": rackedGVR.Version, "resource": rackedGVR.Resource},
		"name":      "raw",
		"namespace": s.ns,
		"operation": op,
		"userInfo":  obj{"username": "hostile"},
	}
	if object != nil {
		req["object"] = object
	}
	if oldObject != nil {
		req["oldObject"] = oldObject
	}
	return obj{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
}

// rackedObject is a RackedCluster as a review carries it.
func (s *suite) rackedObject(spec obj) obj {
	return obj{"apiVersion": "samples.scaleplane.io/v1alpha1", "kind": "RackedCluster",
		"metadata": obj{"name": "raw", "namespace": s.ns}, "spec": spec}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// reviewInput is one raw review.
type reviewInput struct {
	name        string
	method      string // default POST
	path        string // default the RackedCluster's validating path
	contentType string // default application/json; "-" for none
	body        func() io.Reader
	want        reviewResult
}

func (s *suite) runReviews(t *testing.T, inputs []reviewInput) {
	t.Helper()
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			method, path, ct := in.method, in.path, in.contentType
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = webhooks.ValidatePath(rackedGVR)
			}
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := s.postReview(ctx, method, path, ct, in.body())
			if err != nil {
				t.Fatalf("post: %v", err)
			}
			s.expect(t, areaReviews, in.name, in.want, got, false)
		})
	}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }
func raw(b []byte) func() io.Reader  { return func() io.Reader { return bytes.NewReader(b) } }

// refusedReview is an HTTP error from the webhook server whose body is an
// AdmissionReview carrying the same code.
func refusedReview(code int) reviewResult {
	return reviewResult{HTTP: code, APIVersion: "admission.k8s.io/v1", Code: int32(code)}
}

// limitRefusal is an HTTP error the server's limits answer before any
// handler: its body is {"error": ...}, not a review.
func limitRefusal(code int) reviewResult { return reviewResult{HTTP: code} }

// reviewContentInputs: bodies that are not what an API server sends, and
// reviews that are, but of objects no user could store.
func (s *suite) reviewContentInputs(t *testing.T) {
	valid := s.rackedObject(obj{"replicas": 3, "racks": racks("a", "b")})
	invalid := s.rackedObject(obj{"replicas": -1, "racks": racks("a")})
	judged := func(uid string, allowed bool, code int32, patched bool) reviewResult {
		return reviewResult{HTTP: 200, APIVersion: "admission.k8s.io/v1", Allowed: allowed, Code: code, Patched: patched, UID: uid}
	}
	withRequest := func(uid string, edit func(req obj)) func() io.Reader {
		r := s.review(uid, "CREATE", valid, nil)
		edit(r["request"].(obj))
		return raw(mustJSON(r))
	}
	mutate := webhooks.MutatePath(rackedGVR)
	one := string(mustJSON(s.review("one", "CREATE", valid, nil)))
	hugeUID := strings.Repeat("u", 1<<20)
	bigObject := s.rackedObject(obj{"replicas": 3, "racks": racks("a")})
	bigObject["metadata"].(obj)["annotations"] = obj{"filler": strings.Repeat("x", 6<<20)}
	manyRacks := make(list, 10000)
	for i := range manyRacks {
		manyRacks[i] = obj{"name": fmt.Sprintf("r%d", i), "members": 1}
	}
	s.runReviews(t, []reviewInput{
		{name: "valid CREATE to the mutating webhook (control)", path: mutate, body: raw(mustJSON(s.review("ok", "CREATE", valid, nil))), want: judged("ok", true, 0, true)},
		{name: "valid CREATE as admission.k8s.io/v1beta1", path: mutate, body: func() io.Reader {
			r := s.review("beta", "CREATE", valid, nil)
			r["apiVersion"] = "admission.k8s.io/v1beta1"
			return raw(mustJSON(r))()
		}, want: reviewResult{HTTP: 200, APIVersion: "admission.k8s.io/v1beta1", Allowed: true, Patched: true, UID: "beta"}},
		{name: "invalid object (control)", body: raw(mustJSON(s.review("bad", "CREATE", invalid, nil))), want: judged("bad", false, 422, false)},
		{name: "no request", body: text(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), want: refusedReview(400)},
		{name: "request null", body: text(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`), want: refusedReview(400)},
		{name: "request without a uid", body: withRequest("", func(req obj) { delete(req, "uid") }), want: refusedReview(400)},
		{name: "request key in another case", body: text(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","Request":{"uid":"x","operation":"CREATE"}}`), want: refusedReview(400)},
		{name: "apiVersion admission.k8s.io/v2", body: text(strings.Replace(one, "admission.k8s.io/v1", "admission.k8s.io/v2", 1)), want: refusedReview(400)},
		{name: "kind AdmissionResponse", body: text(strings.Replace(one, `"kind":"AdmissionReview"`, `"kind":"AdmissionResponse"`, 1)), want: refusedReview(400)},
		{name: "a Pod, not a review", body: text(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), want: refusedReview(400)},
		{name: "no apiVersion or kind", body: text(`{"request":{"uid":"x","operation":"CREATE"}}`), want: refusedReview(400)},
		{name: "not JSON", body: text("hello"), want: refusedReview(400)},
		{name: "empty body", body: text(""), want: refusedReview(400)},
		{name: "trailing garbage", body: text(one + "garbage"), want: refusedReview(400)},
		{name: "two reviews back to back", body: text(one + one), want: refusedReview(400)},
		{name: "100,000 nested lists", body: text(strings.Repeat("[", 100000) + strings.Repeat("]", 100000)), want: refusedReview(400)},
		{name: "100,000 nested lists as the object", body: text(strings.Replace(one, string(mustJSON(valid)), strings.Repeat("[", 100000)+strings.Repeat("]", 100000), 1)), want: refusedReview(400)},
		{name: "invalid UTF-8 in the uid", body: text(strings.Replace(one, `"uid":"one"`, "\"uid\":\"\xff\xfe\"", 1)), want: judged("\ufffd\ufffd", true, 0, false)},
		{name: "duplicate uid keys (last wins, as the API machinery decodes)", body: text(strings.Replace(one, `"uid":"one"`, `"uid":"first","uid":"last"`, 1)), want: judged("last", true, 0, false)},
		{name: "a uid of 1 MiB", body: raw(mustJSON(s.review(hugeUID, "CREATE", valid, nil))), want: judged(hugeUID, true, 0, false)},
		{name: "replicas 1e400 (no float holds it)", body: text(strings.Replace(one, `"replicas":3`, `"replicas":1e400`, 1)), want: judged("one", false, 400, false)},
		{name: "object a string", body: raw(mustJSON(s.review("str", "CREATE", "RackedCluster", nil))), want: judged("str", false, 400, false)},
		{name: "object a list", path: mutate, body: raw(mustJSON(s.review("lst", "CREATE", list{1, 2}, nil))), want: judged("lst", false, 400, false)},
		{name: "CREATE without an object", body: raw(mustJSON(s.review("none", "CREATE", nil, nil))), want: judged("none", false, 400, false)},
		{name: "UPDATE whose old object does not parse (judged as a CREATE)", body: raw(mustJSON(s.review("old", "UPDATE", valid, list{"not", "an", "object"}))), want: judged("old", true, 0, false)},
		{name: "UPDATE whose old object does not parse, new one invalid", body: raw(mustJSON(s.review("old2", "UPDATE", invalid, "garbage"))), want: judged("old2", false, 422, false)},
		{name: "UPDATE to the mutating webhook, old object garbage", path: mutate, body: raw(mustJSON(s.review("old3", "UPDATE", valid, obj{"spec": "garbage"}))), want: judged("old3", true, 0, true)},
		{name: "request kind a Deployment", body: withRequest("dep", func(req obj) {
			req["kind"] = obj{"group": "apps", "version": "v1", "kind": "Deployment"}
			req["resource"] = obj{"group": "apps", "version": "v1", "resource": "deployments"}
		}), want: refusedReview(400)},
		{name: "request kind a ZonedDatabase, on the RackedCluster's path", path: mutate, body: withRequest("zdb", func(req obj) {
			req["kind"] = obj{"group": "data.example.org", "version": "v1beta1", "kind": "ZonedDatabase"}
			req["resource"] = obj{"group": "data.example.org", "version": "v1beta1", "resource": "zoneddatabases"}
		}), want: refusedReview(400)},
		{name: "unknown operation", body: withRequest("op", func(req obj) { req["operation"] = "EXPLODE" }), want: judged("op", true, 0, false)},
		{name: "DELETE with a garbage object", body: withRequest("del", func(req obj) { req["operation"], req["object"] = "DELETE", "garbage" }), want: judged("del", true, 0, false)},
		{name: "6 MiB object", path: mutate, body: raw(mustJSON(s.review("big", "CREATE", bigObject, nil))), want: judged("big", true, 0, true)},
		{name: "10,000 racks", path: mutate, body: raw(mustJSON(s.review("racks", "CREATE", s.rackedObject(obj{"replicas": 2, "racks": manyRacks}), nil))), want: judged("racks", true, 0, true)},
		{name: "/scale review of a string", path: webhooks.ValidateScalePath(rackedGVR), body: func() io.Reader {
			r := s.review("scale", "UPDATE", "garbage", nil)
			req := r["request"].(obj)
			req["subResource"], req["kind"] = "scale", obj{"group": "autoscaling", "version": "v1", "kind": "Scale"}
			return raw(mustJSON(r))()
		}, want: judged("scale", false, 400, false)},
		{name: "/scale review of a RackedCluster, not a Scale", path: webhooks.ValidateScalePath(rackedGVR), body: raw(mustJSON(s.review("notscale", "UPDATE", valid, nil))), want: refusedReview(400)},
		{name: "a path no webhook serves", path: "/mutate-nothing", body: text(one), want: reviewResult{HTTP: 404}},
	})
}

// reviewTransportInputs: requests the API server never sends: wrong
// methods and content types, bodies over the limit or too slow, huge
// headers, HTTP/2, floods.
func (s *suite) reviewTransportInputs(t *testing.T) {
	one := mustJSON(s.review("one", "CREATE", s.rackedObject(obj{"replicas": 3, "racks": racks("a")}), nil))
	eightMiB := func() io.Reader { return io.LimitReader(zeros{}, 8<<20) }
	// One at a time (in parallel with each other), then the floods alone,
	// so that no single request meets a flood's 429.
	t.Run("single requests", func(t *testing.T) {
		s.runReviews(t, []reviewInput{
			{name: "GET", method: http.MethodGet, body: raw(nil), want: refusedReview(405)},
			{name: "PUT", method: http.MethodPut, body: raw(one), want: refusedReview(405)},
			{name: "content type text/plain", contentType: "text/plain", body: raw(one), want: refusedReview(415)},
			{name: "content type application/yaml", contentType: "application/yaml", body: raw(one), want: refusedReview(415)},
			{name: "no content type", contentType: "-", body: raw(one), want: refusedReview(415)},
			{name: "content type application/json;charset=utf-8 (accepted)", contentType: "application/json; charset=utf-8", body: raw(one),
				want: reviewResult{HTTP: 200, APIVersion: "admission.k8s.io/v1", Allowed: true, UID: "one"}},
			{name: "8 MiB body, length declared", body: func() io.Reader { return bytes.NewReader(make([]byte, 8<<20)) }, want: limitRefusal(413)},
			{name: "8 MiB body, chunked", body: func() io.Reader { return io.MultiReader(eightMiB()) }, want: limitRefusal(413)},
		})
		t.Run("slow body", func(t *testing.T) {
			t.Parallel()
			got := s.rawExchange(t, func(w io.Writer) {
				fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", webhooks.ValidatePath(rackedGVR))
			}, func(w io.Writer, stop <-chan struct{}) { drip(w, stop) })
			s.expect(t, areaReviews, "slow body (a byte every 100 ms)", rawResult{Status: 408}, got, false)
		})
		t.Run("huge header", func(t *testing.T) {
			t.Parallel()
			got := s.rawExchange(t, func(w io.Writer) {
				fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nX-Huge: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
					webhooks.ValidatePath(rackedGVR), strings.Repeat("h", 1<<20), len(one), one)
			}, nil)
			s.expect(t, areaReviews, "1 MiB header", rawResult{Status: 431}, got, false)
		})
		t.Run("HTTP/2 preface", func(t *testing.T) {
			t.Parallel()
			got := s.rawExchange(t, func(w io.Writer) { fmt.Fprint(w, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") }, nil)
			s.expect(t, areaReviews, "HTTP/2 connection preface over HTTP/1.1", rawResult{Status: 400}, got, false)
		})
		t.Run("h2c upgrade", func(t *testing.T) {
			t.Parallel()
			got := s.rawExchange(t, func(w io.Writer) {
				fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
					webhooks.ValidatePath(rackedGVR), len(one), one)
			}, nil)
			s.expect(t, areaReviews, "h2c upgrade request (served as HTTP/1.1)", rawResult{Status: 200, Proto: "HTTP/1.1"}, got, false)
		})
		t.Run("ALPN h2 only", func(t *testing.T) {
			t.Parallel()
			cfg := webhookTLS(t)
			cfg.NextProtos = []string{"h2"}
			got := "negotiated"
			if conn, err := tls.Dial("tcp", s.bin.webhookAddr, cfg); err != nil {
				got = "handshake refused"
			} else {
				got += " " + conn.ConnectionState().NegotiatedProtocol
				conn.Close()
			}
			s.expect(t, areaReviews, "TLS offering only h2", "handshake refused", got, false)
		})
		t.Run("ALPN h2 first", func(t *testing.T) {
			t.Parallel()
			cfg := webhookTLS(t)
			cfg.NextProtos = []string{"h2", "http/1.1"}
			conn, err := tls.Dial("tcp", s.bin.webhookAddr, cfg)
			got := "handshake refused"
			if err == nil {
				got = conn.ConnectionState().NegotiatedProtocol
				conn.Close()
			}
			s.expect(t, areaReviews, "TLS offering h2 before http/1.1", "http/1.1", got, false)
		})
		t.Run("slow clients beside a review", func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			var slow408 atomic.Int64
			for range 50 {
				wg.Go(func() {
					r := s.rawExchange(t, func(w io.Writer) {
						fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", webhooks.ValidatePath(rackedGVR), 7<<20)
					}, func(w io.Writer, stop <-chan struct{}) { drip(w, stop) })
					if r.Status == 408 {
						slow408.Add(1)
					}
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			served, err := s.postReview(ctx, http.MethodPost, webhooks.ValidatePath(rackedGVR), "application/json", bytes.NewReader(one))
			if err != nil {
				t.Errorf("a review beside the slow clients: %v", err)
			}
			wg.Wait()
			got := struct{ Review, SlowTimedOut int }{served.HTTP, int(slow408.Load())}
			s.expect(t, areaReviews, "50 clients trickling 7 MiB bodies beside a review", struct{ Review, SlowTimedOut int }{200, 50}, got, false)
		})
	})
	t.Run("flood", func(t *testing.T) {
		got := s.flood(t, "webhook", 300, func(ctx context.Context, c *http.Client) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+s.bin.webhookAddr+webhooks.ValidatePath(rackedGVR), bytes.NewReader(one))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}, webhookTLS(t), 200, 429)
		s.expect(t, areaReviews, "300 clients at once, each its own connection", floodResult{}, got, false)
	})
	t.Run("bodies over the buffers", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), 7<<20-1)
		got := s.flood(t, "webhook", 24, func(ctx context.Context, c *http.Client) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+s.bin.webhookAddr+webhooks.ValidatePath(rackedGVR), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode, nil
		}, webhookTLS(t), 400, 429)
		s.expect(t, areaReviews, "24 bodies of 7 MiB at once (168 MiB, over the 64 MiB of buffers)", floodResult{}, got, false)
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// rawResult is what a hand-written exchange got back.
type rawResult struct {
	Status int
	Proto  string `json:",omitempty"`
}

// rawExchange writes head on a new TLS connection to the webhook server,
// then runs trickle (when set) until the server answers, and reads the
// answer's status line. A server that closes without answering gives
// Status 0.
func (s *suite) rawExchange(t *testing.T, head func(io.Writer), trickle func(io.Writer, <-chan struct{})) rawResult {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", s.bin.webhookAddr, webhookTLS(t))
	if err != nil {
		t.Errorf("dial: %v", err)
		return rawResult{}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	stop := make(chan struct{})
	defer close(stop)
	w := bufio.NewWriterSize(conn, 64<<10)
	head(w)
	if err := w.Flush(); err != nil && !errors.Is(err, net.ErrClosed) {
		// The server may answer (431) and close before the head is written.
		t.Logf("write: %v", err)
	}
	if trickle != nil {
		go trickle(conn, stop)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return rawResult{}
	}
	resp.Body.Close()
	r := rawResult{Status: resp.StatusCode}
	if resp.StatusCode == 200 {
		r.Proto = resp.Proto
	}
	return r
}

// drip writes a byte every 100 ms until stopped or refused.
func drip(w io.Writer, stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if _, err := w.Write([]byte(" ")); err != nil {
			return
		}
	}
}

// floodResult counts the answers of a flood that were neither of the
// accepted statuses, and the requests that got no answer. A request cut
// while its body was still being sent was refused early (the server
// answers a body it will not read and closes the connection, which the
// sender sees as a reset): that is not counted.
type floodResult struct {
	Unanswered, Other int
	// Statuses are the unexpected ones seen (at most one of each).
	Statuses []int `json:",omitempty"`
}

// flood runs call from n clients at once, each with its own connection,
// and counts the answers that are none of ok. The 429s it got are added
// to the server's count, which its metrics must show.
func (s *suite) flood(t *testing.T, server string, n int, call func(context.Context, *http.Client) (int, error), tc *tls.Config, ok ...int) floodResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		res    floodResult
		counts = map[int]int{}
		lastEr error
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
			<-start
			code, err := call(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			counts[code]++
			switch {
			case err != nil && cutWhileSending(err):
			case err != nil:
				res.Unanswered++
				lastEr = err
			case !contains(ok, code):
				res.Other++
				if !contains(res.Statuses, code) {
					res.Statuses = append(res.Statuses, code)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("%d clients: answers by status %v; last error %v", n, counts, lastEr)
	s.mu.Lock()
	s.tooMany[server] += counts[http.StatusTooManyRequests]
	s.mu.Unlock()
	return res
}

// cutWhileSending reports a client error of a request whose body the
// server stopped reading.
func cutWhileSending(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

func contains(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}
