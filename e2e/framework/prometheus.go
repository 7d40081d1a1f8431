package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/scaleplane/scaleplane/controlplane"
)

// PrometheusBinary is the Prometheus server in the binary folder (make
// tools builds it from github.com/prometheus/prometheus, hack/tools/prometheus).
const PrometheusBinary = "prometheus"

// Prometheus is a real Prometheus server on 127.0.0.1 scraping the targets
// a test writes to its file_sd file every second.
type Prometheus struct {
	// URL is its API root, e.g. http://127.0.0.1:40123.
	URL     string
	Process *controlplane.Program
	targets string
	// opts start the same server again (Restart).
	opts controlplane.ProgramOptions
}

// PrometheusTarget is one scrape target: an address and the labels every
// sample from it gets (namespace, job, ...).
type PrometheusTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// StartPrometheus starts Prometheus with its data in dir and waits until it
// is ready, scraping every second, as scaleplane scrapes in the tests, so
// both stores hold the same series at the same resolution. Stop ends it.
func StartPrometheus(ctx context.Context, dir string) (*Prometheus, error) {
	return StartPrometheusEvery(ctx, dir, time.Second)
}

// StartPrometheusEvery is StartPrometheus scraping every interval (whole
// seconds, at least one).
func StartPrometheusEvery(ctx context.Context, dir string, interval time.Duration) (*Prometheus, error) {
	if interval < time.Second || interval%time.Second != 0 {
		return nil, fmt.Errorf("prometheus scrape interval %s: want whole seconds, at least 1s", interval)
	}
	if err := controlplane.CheckBinaries(PrometheusBinary); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + addr, targets: filepath.Join(dir, "targets.json")}
	if err := p.SetTargets(nil); err != nil {
		return nil, err
	}
	secs := int(interval / time.Second)
	cfg := fmt.Sprintf(`global:
  scrape_interval: %ds
  scrape_timeout: %ds
scrape_configs:
- job_name: e2e
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
`, secs, min(secs, 10), p.targets)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	p.opts = controlplane.ProgramOptions{
		Path: Binary(PrometheusBinary),
		Args: []string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--log.level=warn",
		},
		LogPath: filepath.Join(dir, "prometheus.log"),
		Out:     verboseOut(),
	}
	if err := p.run(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// run starts the server with p.opts and waits until it is ready.
func (p *Prometheus) run(ctx context.Context) error {
	var err error
	p.Process, err = controlplane.StartProgram(PrometheusBinary, p.opts)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, state := p.Process.Exited(); exited {
			return false, fmt.Errorf("prometheus exited (%s); its log ends:\n%s", state, p.Process.Log(3000))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Stop()
		return fmt.Errorf("wait for prometheus: %w", err)
	}
	return nil
}

// Restart starts a stopped server again, at the same address with the
// same data, and waits until it is ready.
func (p *Prometheus) Restart(ctx context.Context) error {
	p.Stop()
	return p.run(ctx)
}

// SetTargets replaces what Prometheus scrapes (file_sd: written to a
// temporary file and renamed, so Prometheus never reads half a file).
func (p *Prometheus) SetTargets(ts []PrometheusTarget) error {
	if ts == nil {
		ts = []PrometheusTarget{}
	}
	data, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	tmp := p.targets + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p.targets)
}

// Stop ends Prometheus.
func (p *Prometheus) Stop() {
	if p != nil && p.Process != nil {
		p.Process.Stop(10 * time.Second)
	}
}
