package failover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// service stands in for the cluster network between kube-apiserver and
// scaleplane's pods: kube-apiserver's egress selector sends every
// connection for the "cluster" network (Service-referenced webhooks among
// them) as an HTTP CONNECT to it, the way it talks to konnectivity, and it
// plays kube-proxy for the webhook Service: each new connection to the
// Service's clusterIP:port is forwarded to one ready endpoint, round robin
// (IPVS' rr; iptables picks at random). It never reads or retries HTTP: the
// bytes are TLS between kube-apiserver and the pod, so a call cut by a dying
// pod fails exactly as it would in a cluster, and any retry is the API
// server's own.
//
// Readiness is the kubelet's: each endpoint's /readyz is probed every
// probePeriod; an endpoint turns unready after failureThreshold failed probes
// in a row, or at once when its process refuses connections (a dead
// container makes the kubelet mark the pod unready without waiting for the
// probe). A refused dial therefore skips to the next ready endpoint: the
// same as the dead pod's endpoint having been removed already. In a cluster
// that removal takes the kubelet's PLEG relist and the EndpointSlice and
// kube-proxy sync (about a second or more), during which new connections to
// the dead pod fail; docs/design.md says what that means.
//
// Why not a real EndpointSlice: with --enable-aggregator-routing
// kube-apiserver does resolve a webhook's Service to a random ready
// endpoint of its EndpointSlices (per request, with the
// WebhookRoundTripLoadBalancing gate, beta and on in 1.37), but it refuses
// endpoint addresses in 127.0.0.0/8 ("may not be in the loopback range"),
// and tests serve on 127.0.0.1 only. The egress selector keeps everything
// else real: the webhook configurations' Service reference, the clusterIP
// kube-apiserver allocates and dials, HTTP/1.1 (kube-apiserver uses it for
// every Service-referenced webhook so connections spread over endpoints),
// and the certificate checked against the Service's DNS name.
type service struct {
	ln        net.Listener
	clusterIP atomic.Pointer[string] // "ip:port" the Service is reached at

	mu        sync.Mutex
	endpoints []*endpoint
	next      int
	noReady   int // connections refused because no endpoint was ready
	unknown   int // CONNECTs to an address that is not the Service

	wg     sync.WaitGroup
	cancel context.CancelFunc
}

const (
	probePeriod      = time.Second
	probeTimeout     = time.Second // the kubelet's default timeoutSeconds
	failureThreshold = 3           // the kubelet's default
)

// endpoint is one replica's webhook port with its readiness probe.
type endpoint struct {
	name        string
	webhookAddr string
	readyzURL   string

	mu       sync.Mutex
	ready    bool
	failures int
	stats    endpointStats
}

// endpointStats counts what went through one endpoint.
type endpointStats struct {
	// Conns is how many connections were forwarded to it, Open how many
	// are still open.
	Conns, Open int
	// Answered counts exchanges it answered: webhook calls, and the TLS
	// handshake of each connection (response bytes after request bytes;
	// HTTP/1.1 carries one call at a time per connection).
	Answered int
	// Cut counts calls it left unanswered because its side of the
	// connection went away: a call in flight when it closed, or request
	// bytes sent after it closed. LastCut is when the last one was seen.
	Cut     int
	LastCut time.Time
}

func newService(ln net.Listener) *service {
	ctx, cancel := context.WithCancel(context.Background())
	s := &service{ln: ln, cancel: cancel}
	s.wg.Go(func() { s.serve(ctx) })
	s.wg.Go(func() { s.probe(ctx) })
	return s
}

// Close stops accepting and probing; forwarded connections end with their
// peers.
func (s *service) Close() {
	s.cancel()
	_ = s.ln.Close()
	s.wg.Wait()
}

// SetClusterIP says where the Service is: CONNECTs to any other address are
// refused, as an address with no route would be.
func (s *service) SetClusterIP(ip string, port int) {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	s.clusterIP.Store(&addr)
}

// AddEndpoint adds a replica: its webhook port (the Service's targetPort)
// and its probe address. It starts unready, as a new pod does.
func (s *service) AddEndpoint(name string, webhookPort, probePort int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = append(s.endpoints, &endpoint{
		name:        name,
		webhookAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)),
		readyzURL:   fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
	})
}

// Ready reports whether the named endpoint is ready.
func (s *service) Ready(name string) bool {
	e := s.endpoint(name)
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

// Stats returns what went through the named endpoint.
func (s *service) Stats(name string) endpointStats {
	e := s.endpoint(name)
	if e == nil {
		return endpointStats{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Refused returns how many connections found no ready endpoint, and how
// many asked for an address that is not the Service.
func (s *service) Refused() (noReady, unknown int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noReady, s.unknown
}

func (s *service) endpoint(name string) *endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.endpoints {
		if e.name == name {
			return e
		}
	}
	return nil
}

func (s *service) serve(ctx context.Context) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(ctx, c) })
	}
}

// handle answers one CONNECT from kube-apiserver and forwards the tunnel.
func (s *service) handle(ctx context.Context, client net.Conn) {
	defer client.Close()
	br := bufio.NewReader(client)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if want := s.clusterIP.Load(); req.Method != http.MethodConnect || want == nil || req.Host != *want {
		s.mu.Lock()
		s.unknown++
		s.mu.Unlock()
		fmt.Fprintf(client, "HTTP/1.1 502 Bad Gateway\r\n\r\nno route to %s\n", req.Host)
		return
	}
	// The API server sends nothing after CONNECT until it has the answer
	// (TLS: the client speaks first), so nothing can be buffered here.
	if br.Buffered() > 0 {
		return
	}
	e, backend := s.dial(ctx)
	if backend == nil {
		fmt.Fprint(client, "HTTP/1.1 503 Service Unavailable\r\n\r\nno ready endpoints\n")
		return
	}
	defer backend.Close()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	e.forward(client, backend)
}

// dial picks the next ready endpoint that accepts a connection; one that
// refuses is unready from then on.
func (s *service) dial(ctx context.Context) (*endpoint, net.Conn) {
	s.mu.Lock()
	candidates := make([]*endpoint, 0, len(s.endpoints))
	for i := range s.endpoints {
		e := s.endpoints[(s.next+i)%len(s.endpoints)]
		if e.isReady() {
			candidates = append(candidates, e)
		}
	}
	s.next++
	s.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second}
	for _, e := range candidates {
		c, err := d.DialContext(ctx, "tcp", e.webhookAddr)
		if err == nil {
			return e, c
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			e.markDead()
		}
	}
	s.mu.Lock()
	s.noReady++
	s.mu.Unlock()
	return nil, nil
}

func (e *endpoint) isReady() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

func (e *endpoint) markDead() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready, e.failures = false, failureThreshold
}

// probe runs every endpoint's readiness probe every probePeriod.
func (s *service) probe(ctx context.Context) {
	hc := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(probePeriod)
	defer tick.Stop()
	for {
		s.mu.Lock()
		eps := append([]*endpoint(nil), s.endpoints...)
		s.mu.Unlock()
		for _, e := range eps {
			e.probeOnce(ctx, hc)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (e *endpoint) probeOnce(ctx context.Context, hc *http.Client) {
	ok, refused := false, false
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.readyzURL, nil)
	resp, err := hc.Do(req)
	switch {
	case err != nil:
		refused = errors.Is(err, syscall.ECONNREFUSED)
	default:
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ok = resp.StatusCode == http.StatusOK
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case ok:
		e.ready, e.failures = true, 0
	case refused:
		e.ready, e.failures = false, failureThreshold
	default:
		if e.failures++; e.failures >= failureThreshold {
			e.ready = false
		}
	}
}

// tunnel is one forwarded connection. HTTP/1.1 (which kube-apiserver
// always uses for Service-referenced webhooks) carries one call at a time,
// so request bytes after the last response bytes mean a call is awaiting
// its answer. Only the TLS record layer is visible here: a client flight
// of fewer than minRequest bytes is the last of the TLS handshake (the
// client's Finished, about 64 bytes, which the server does not answer) or
// an alert, never an AdmissionReview (a ClientHello, which the server does
// answer, counts as a call: a handshake cut by the kill fails a call too).
type tunnel struct {
	e *endpoint

	mu           sync.Mutex
	pending      int  // client bytes since the pod's last bytes
	clientClosed bool // the API server closed it (an idle connection it let go)
	backendGone  bool // the pod's side closed or broke
	cutCounted   bool
}

// forward copies both ways until both sides are done, counting calls.
func (e *endpoint) forward(client, backend net.Conn) {
	e.mu.Lock()
	e.stats.Conns++
	e.stats.Open++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.stats.Open--
		e.mu.Unlock()
	}()
	t := &tunnel{e: e}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				// A request into a connection whose pod is gone, or one
				// the pod can no longer take, gets what a dead pod's
				// kernel gives: a reset.
				if t.sent(n) {
					if t.isCut() {
						_ = client.Close()
						return
					}
					continue
				}
				if _, werr := backend.Write(buf[:n]); werr != nil {
					t.gone()
					_ = client.Close()
					return
				}
			}
			if err != nil {
				t.closedByClient()
				if cw, ok := backend.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
				return
			}
		}
	})
	wg.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := backend.Read(buf)
			if n > 0 {
				t.answered()
				if _, werr := client.Write(buf[:n]); werr != nil {
					_ = backend.Close()
					return
				}
			}
			if err != nil {
				if t.gone() {
					// The pod went away under a live connection: pass
					// its FIN on and keep reading, so request bytes the
					// API server still sends are seen (and counted).
					if cw, ok := client.(interface{ CloseWrite() error }); ok {
						_ = cw.CloseWrite()
					}
				}
				return
			}
		}
	})
	wg.Wait()
}

// minRequest separates a call from the TLS handshake's last flight.
const minRequest = 128

// sent records n request bytes; it reports whether the pod is already gone.
// Bytes sent after that are a call cut, unless they are few enough to be
// the close_notify alert the API server sends when it closes the
// connection it saw end.
func (t *tunnel) sent(n int) (gone bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending += n
	if t.backendGone && t.awaiting() {
		t.cut()
	}
	return t.backendGone
}

func (t *tunnel) awaiting() bool { return t.pending >= minRequest }

func (t *tunnel) isCut() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cutCounted
}

func (t *tunnel) answered() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.awaiting() {
		t.e.mu.Lock()
		t.e.stats.Answered++
		t.e.mu.Unlock()
	}
	t.pending = 0
}

func (t *tunnel) closedByClient() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clientClosed = true
}

// gone records that the pod's side ended while the API server's had not;
// it reports whether that is news.
func (t *tunnel) gone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clientClosed || t.backendGone {
		return false
	}
	t.backendGone = true
	if t.awaiting() {
		t.cut()
	}
	return true
}

// cut counts one unanswered call per connection (HTTP/1.1 has at most one
// outstanding). t.mu is held.
func (t *tunnel) cut() {
	if t.cutCounted {
		return
	}
	t.cutCounted = true
	t.e.mu.Lock()
	t.e.stats.Cut++
	t.e.stats.LastCut = time.Now()
	t.e.mu.Unlock()
}
