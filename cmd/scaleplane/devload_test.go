//go:build !nodev

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func loadPod(name, ip string, port int32, ready bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
			{Name: "grpc", ContainerPort: 9000}, {Name: "http", ContainerPort: port},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

// TestReadyTargets: only Running and Ready pods on a loopback
// address get requests, at their port named http; a ready pod elsewhere is
// counted and skipped, never sent anything.
func TestReadyTargets(t *testing.T) {
	pending := loadPod("web-a-2", "", 0, false)
	pending.Status.Phase = corev1.PodPending
	deleting := loadPod("web-a-3", "127.0.0.1", 8083, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	urls, ready, skipped := readyTargets([]corev1.Pod{
		loadPod("web-a-0", "127.0.0.1", 8080, true),
		loadPod("web-a-1", "127.0.0.1", 8081, false),
		pending,
		deleting,
		loadPod("web-b-0", "10.1.2.3", 8080, true),
		loadPod("web-c-0", "127.0.0.1", 8082, true),
	})
	if diff := cmp.Diff([]string{"http://127.0.0.1:8080/", "http://127.0.0.1:8082/"}, urls); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if ready != 3 || skipped != 1 {
		t.Errorf("ready %d, skipped %d; want 3 and 1", ready, skipped)
	}
}

// TestPacing: after t seconds rps*t requests are due in all,
// spread round robin over the ready pods as they come and go; those due
// while no pod is ready are counted, not sent.
func TestPacing(t *testing.T) {
	l := &loader{rps: 10}
	sent := map[string]int{}
	l.dispatch = func(url string) { sent[url]++ }
	done := l.step(time.Second, 0) // no pods yet
	two := []string{"a", "b"}
	l.targets.Store(&two)
	done = l.step(3*time.Second, done)
	three := []string{"a", "b", "c"}
	l.targets.Store(&three)
	done = l.step(6*time.Second+500*time.Millisecond, done)
	if diff := cmp.Diff(map[string]int{"a": 10 + 12, "b": 10 + 11, "c": 12}, sent); diff != "" {
		t.Errorf("requests per pod (-want +got):\n%s", diff)
	}
	if done != 65 || l.noPod.Load() != 10 || l.sent.Load() != 55 {
		t.Errorf("due %d, no pod %d, sent %d; want 65, 10, 55", done, l.noPod.Load(), l.sent.Load())
	}
}

// TestTargets: NAMESPACE/NAME or NAMESPACE/RESOURCE/NAME, and
// activity only to a loopback address.
func TestTargets(t *testing.T) {
	for in, want := range map[string][3]string{
		"default/web":                {"default", "", "web"},
		"default/rackedclusters/web": {"default", "rackedclusters", "web"},
	} {
		ns, res, name, err := parseLoadTarget(in)
		if err != nil || [3]string{ns, res, name} != want {
			t.Errorf("parseLoadTarget(%q) = %q %q %q %v, want %q", in, ns, res, name, err, want)
		}
	}
	for _, bad := range []string{"", "web", "default/", "/web", "a/b/c/d", "default//web"} {
		if _, _, _, err := parseLoadTarget(bad); err == nil || !strings.Contains(err.Error(), "NAMESPACE/NAME") {
			t.Errorf("parseLoadTarget(%q): %v, want an error saying what to give", bad, err)
		}
	}
	for url, ok := range map[string]bool{
		"http://127.0.0.1:4000":    true,
		"https://[::1]:4000/":      true,
		"http://10.0.0.1:4000":     false,
		"http://example.com":       false,
		"127.0.0.1:4000":           false,
		"ftp://127.0.0.1:4000/x":   false,
		"http://localhost.evil:80": false,
	} {
		if err := loopbackURL(url); (err == nil) != ok {
			t.Errorf("loopbackURL(%q) = %v, want ok=%v", url, err, ok)
		}
	}
}

// TestRateWindow: the achieved rate is over the last span.
func TestRateWindow(t *testing.T) {
	r := newRateWindow(5 * time.Second)
	t0 := time.Unix(100, 0)
	got := []float64{r.add(t0, 0)}
	for i := 1; i <= 10; i++ {
		n := int64(i * 10) // 10/s for 10 s
		if i > 5 {
			n = 50 + int64(i-5)*30 // then 30/s
		}
		got = append(got, r.add(t0.Add(time.Duration(i)*time.Second), n))
	}
	want := []float64{0, 10, 10, 10, 10, 10, 14, 18, 22, 26, 30}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
}

// TestRunSendsAndCounts runs the loader against two loopback
// servers: every request due is sent to one of them and answered, or
// counted as an error when a server fails.
func TestRunSendsAndCounts(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	handler := func(name string, code int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			hits[name]++
			mu.Unlock()
			w.WriteHeader(code)
		})
	}
	good := httptest.NewServer(handler("good", http.StatusOK))
	defer good.Close()
	bad := httptest.NewServer(handler("bad", http.StatusServiceUnavailable))
	defer bad.Close()
	l := newLoader(50, nil, nil, "")
	targets := []string{good.URL + "/", bad.URL + "/"}
	l.targets.Store(&targets)
	var wg sync.WaitGroup
	l.dispatch = func(url string) {
		wg.Add(1)
		go func() { defer wg.Done(); l.send(context.Background(), url) }()
	}
	done := l.step(2*time.Second, 0)
	wg.Wait()
	if done != 100 || l.ok.Load() != 50 || l.errs.Load() != 50 {
		t.Errorf("due %d, ok %d, errors %d; want 100, 50, 50", done, l.ok.Load(), l.errs.Load())
	}
	if diff := cmp.Diff(map[string]int{"good": 50, "bad": 50}, hits); diff != "" {
		t.Errorf("requests per server (-want +got):\n%s", diff)
	}
}

// BenchmarkLoadAccuracy runs `dev load`'s loop for 3 s at several
// rates against three loopback servers and reports how close it comes:
// due/asked (the pacing), sent/s, and answered/sent. Run with
// -benchtime=1x; the figures are in the report, not asserted.
func BenchmarkLoadAccuracy(b *testing.B) {
	var servers []string
	for range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
		defer s.Close()
		servers = append(servers, s.URL+"/")
	}
	for _, rps := range []float64{35, 200, 1000} {
		b.Run(fmt.Sprintf("rps=%g", rps), func(b *testing.B) {
			for range b.N {
				l := newLoader(rps, nil, nil, "")
				l.targets.Store(&servers)
				start := time.Now()
				if err := l.run(context.Background(), 3*time.Second, io.Discard, false); err != nil {
					b.Fatal(err)
				}
				secs := time.Since(start).Seconds()
				due := float64(l.sent.Load() + l.noPod.Load())
				b.ReportMetric(due/(rps*3), "due/asked")
				b.ReportMetric(float64(l.sent.Load())/secs, "sent/s")
				b.ReportMetric(float64(l.ok.Load())/max(float64(l.sent.Load()), 1), "answered/sent")
			}
		})
	}
}

// A load started in a new terminal, without SCALEPLANE_SERVER, finds the
// running dev's metrics address on the kubeconfig context that dev wrote;
// where there is none it fails at once saying what to set, instead of
// counting its whole run as "no pod ready".
func TestDevServerFromKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	me := self(t)
	k, err := readUserKubeconfig(path, me)
	if err != nil {
		t.Fatal(err)
	}
	k.server = "http://127.0.0.1:40123"
	if err := k.add(clusterKubeconfig(t), me); err != nil {
		t.Fatal(err)
	}
	withServer := *load(t, path)
	k.server = ""
	if err := k.remove(me, k.edit()); err != nil {
		t.Fatal(err)
	}
	k, err = readUserKubeconfig(path, me)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.add(clusterKubeconfig(t), me); err != nil {
		t.Fatal(err)
	}
	withoutServer := *load(t, path)
	notDev := *withServer.DeepCopy()
	notDev.Contexts["prod"] = &clientcmdapi.Context{Cluster: devKubeconfigName, AuthInfo: devKubeconfigName}
	notDev.CurrentContext = "prod"
	running := func(m devMarker) bool { return m == markerOf(me) }
	cases := []struct {
		name    string
		cfg     clientcmdapi.Config
		running func(devMarker) bool
		want    string
		wantErr string
	}{
		{"the running dev's context", withServer, running, "http://127.0.0.1:40123", ""},
		{"a context that is not dev's", notDev, running, "", `current context "prod" is not scaleplane dev's; set SCALEPLANE_SERVER`},
		{"a dev that no longer runs", withServer, func(devMarker) bool { return false }, "", "no longer runs: start scaleplane dev again, or set SCALEPLANE_SERVER"},
		{"a dev that recorded no address", withoutServer, running, "", "recorded none"},
		{"no current context", clientcmdapi.Config{}, running, "", "no current context; set SCALEPLANE_SERVER"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := devServerOf(tc.cfg, tc.running)
			if got != tc.want {
				t.Errorf("address %q, want %q", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// Rates that are not a positive finite number are refused before anything
// runs, NaN included (every comparison with NaN is false).
func TestDevLoadRefusesBadRates(t *testing.T) {
	for _, rps := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -3, maxLoadRPS + 1} {
		if err := checkLoadRate(rps); err == nil || !strings.Contains(err.Error(), "give a rate above 0") {
			t.Errorf("--rps %g: %v, want a refusal", rps, err)
		}
	}
	for _, rps := range []float64{0.5, 35, maxLoadRPS} {
		if err := checkLoadRate(rps); err != nil {
			t.Errorf("--rps %g refused: %v", rps, err)
		}
	}
}

// From a new terminal in the folder scaleplane dev runs in, the load reads
// the kubeconfig dev wrote there unless told another.
func TestDevLoadKubeconfig(t *testing.T) {
	has := func(string) bool { return true }
	none := func(string) bool { return false }
	cases := []struct {
		name, flag, env string
		exists          func(string) bool
		want            string
	}{
		{"the flag wins", "/tmp/k", "/tmp/env", has, "/tmp/k"},
		{"$KUBECONFIG is left to the loading rules", "", "/tmp/env", has, ""},
		{"dev's own file in this folder", "", "", has, devDefaultKubeconfig},
		{"no file: the loading rules' default", "", "", none, ""},
	}
	for _, tc := range cases {
		if got := loadKubeconfigPath(tc.flag, tc.env, tc.exists); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
