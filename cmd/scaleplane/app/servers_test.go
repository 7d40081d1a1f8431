package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/profile"
)

// startServers builds the metrics and probe servers of cfg on 127.0.0.1,
// as Run does, and runs them until the test ends. Outside dev, the
// metrics server's authentication points at an address that refuses
// connections: tests here send no request that needs it.
func startServers(t *testing.T, cfg *configv1alpha2.Configuration, dev bool) (metricsAddr, probeAddr string) {
	t.Helper()
	s := newServers()
	m := servedManager{s: s}
	if err := m.AddHealthzCheck("ping", healthz.Ping); err != nil {
		t.Fatal(err)
	}
	if err := m.AddMetricsServerExtraHandler("/debug/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strings.Repeat("x", int(n)))
	})); err != nil {
		t.Fatal(err)
	}
	opts := Options{Config: cfg, RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}, MetricsAddr: "127.0.0.1:0", ProbeAddr: "127.0.0.1:0", Dev: dev}
	srvs, err := s.build(opts, http.DefaultClient, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddReadyzCheck("late", healthz.Ping); err == nil {
		t.Error("a check added after build was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(srvs))
	for _, srv := range srvs {
		go func() { done <- srv.Start(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range srvs {
			if err := <-done; err != nil {
				t.Errorf("server stopped with %v", err)
			}
		}
	})
	return srvs[0].Listener.Addr().String(), srvs[1].Listener.Addr().String()
}

// TestMetricsServerHTTP2: the metrics server refuses an h2-only
// client in the TLS handshake and speaks HTTP/1.1 to the others, unless
// servers.enableHTTP2 is set (controller-runtime's offers h2).
func TestMetricsServerHTTP2(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		cfg := profile.SampleConfiguration()
		cfg.Servers.EnableHTTP2 = enabled
		metrics, _ := startServers(t, cfg, false)
		dial := func(protos ...string) (string, error) {
			conn, err := tls.Dial("tcp", metrics, &tls.Config{InsecureSkipVerify: true, NextProtos: protos}) //nolint:gosec // self-signed test server
			if err != nil {
				return "", err
			}
			defer conn.Close()
			return conn.ConnectionState().NegotiatedProtocol, nil
		}
		h2only, h2err := dial("h2")
		both, err := dial("h2", "http/1.1")
		switch {
		case err != nil:
			t.Errorf("http2=%v: a client offering h2 and http/1.1 was refused: %v", enabled, err)
		case !enabled && (h2err == nil || both != "http/1.1"):
			t.Errorf("HTTP/2 off: an h2-only client got %q (err %v), a client offering both %q; want the first refused, http/1.1", h2only, h2err, both)
		case enabled && (h2err != nil || h2only != "h2" || both != "h2"):
			t.Errorf("HTTP/2 on: negotiated %q and %q (err %v), want h2", h2only, both, h2err)
		}
	}
}

// TestProbeAndMetricsLimits: the configured limits reach the
// probe and metrics servers: a client trickling headers to the probe
// server is cut after servers.probes.readHeaderTimeoutSeconds while
// /healthz is answered, and a body over servers.metrics.maxRequestBodyBytes
// is a 413.
func TestProbeAndMetricsLimits(t *testing.T) {
	cfg := profile.SampleConfiguration()
	cfg.Servers.Probes.ReadHeaderTimeoutSeconds = 1
	cfg.Servers.Probes.ReadTimeoutSeconds = 1
	cfg.Servers.Metrics.MaxRequestBodyBytes = 1000
	metrics, probes := startServers(t, cfg, true)

	conn, err := net.Dial("tcp", probes)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(conn).ReadString('\n')
		closed <- err
	}()
	go func() {
		_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := conn.Write([]byte("a")); err != nil {
				return
			}
		}
	}()
	resp, err := http.Get("http://" + probes + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz beside a slow client: %d, want 200", resp.StatusCode)
	}
	select {
	case err := <-closed:
		// The server closed the connection: the read ends (EOF or reset).
		t.Logf("connection closed by the server: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("a client trickling headers to the probe server is still connected after 20 s (limit 1 s)")
	}

	post := func(n int) int {
		resp, err := http.Post("http://"+metrics+"/debug/echo", "text/plain", strings.NewReader(strings.Repeat("b", n)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := []int{post(1000), post(1001)}; got[0] != 200 || got[1] != 413 {
		t.Errorf("bodies of 1000 and 1001 bytes: %v, want [200 413]", got)
	}
}
