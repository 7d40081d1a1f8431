package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/scaling"
)

// explainMain prints the trigger autoscaler's last decisions for a workload,
// read from GET /debug/autoscaler/{namespace}/{resource}/{name} on the
// manager's metrics server.
func explainMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane explain", flag.ContinueOnError)
	var (
		server    = fs.String("server", envOr("SCALEPLANE_SERVER", "https://127.0.0.1:8443"), "the manager's metrics address: the one `scaleplane dev` prints (http), or https through `kubectl port-forward` ($SCALEPLANE_SERVER)")
		token     = fs.String("token", os.Getenv("SCALEPLANE_TOKEN"), "bearer token allowed to get /debug/autoscaler/* ($SCALEPLANE_TOKEN), e.g. $(kubectl create token NAME)")
		tokenFile = fs.String("token-file", "", "file holding the bearer token")
		caFile    = fs.String("ca-file", "", "CA bundle that signed the metrics server's certificate")
		insecure  = fs.Bool("insecure-skip-tls-verify", false, "do not verify the metrics server's certificate (it is self-signed unless you gave it one)")
		asJSON    = fs.Bool("json", false, "print the endpoint's JSON instead of a table")
		timeout   = fs.Duration("timeout", 10*time.Second, "how long to wait for the answer")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: scaleplane explain NAMESPACE/RESOURCE/NAME [flags]

Prints the trigger autoscaler's last decisions for one workload: each tick's
count, action, reason, trigger values and limits. RESOURCE is the profiled
plural (rackedclusters), optionally with its group, or the kind in lower case.

  scaleplane dev prints the address:   scaleplane explain default/rackedclusters/demo --server http://127.0.0.1:PORT
  in a cluster:                        kubectl -n scaleplane-system port-forward deploy/scaleplane-controller-manager 8443
                                       scaleplane explain shop/functions/cart --token "$(kubectl create token scaleplane-debug)" --insecure-skip-tls-verify

Flags:
`)
		fs.PrintDefaults()
	}
	// Flags may follow the workload, as in kubectl.
	var target string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if target == "" && fs.NArg() > 0 {
		target = fs.Arg(0)
	}
	ns, resource, name, err := parseTarget(target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: %v\n", err)
		return 2
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaleplane explain: read --token-file: %v\n", err)
			return 2
		}
		*token = strings.TrimSpace(string(b))
	}
	client, err := explainClient(*caFile, *insecure)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	body, err := fetchExplanation(ctx, client, *server, *token, ns, resource, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: %v\n", err)
		return 1
	}
	if *asJSON {
		_, _ = os.Stdout.Write(body)
		return 0
	}
	var e autoscaler.Explanation
	if err := json.Unmarshal(body, &e); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: the server's answer is not an explanation: %v\n", err)
		return 1
	}
	renderExplanation(os.Stdout, e)
	return 0
}

// parseTarget splits NAMESPACE/RESOURCE/NAME.
func parseTarget(s string) (ns, resource, name string, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("workload %q: write it as NAMESPACE/RESOURCE/NAME, e.g. default/rackedclusters/demo", s)
	}
	return parts[0], parts[1], parts[2], nil
}

func explainClient(caFile string, insecure bool) (*http.Client, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it, for the self-signed metrics certificate
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tlsCfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	return &http.Client{Transport: tr}, nil
}

// fetchExplanation GETs the explain endpoint and turns every failure into
// a message that says what to change.
func fetchExplanation(ctx context.Context, c *http.Client, server, token, ns, resource, name string) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: give the metrics address as http://HOST:PORT (dev) or https://HOST:PORT", server)
	}
	u = u.JoinPath(autoscaler.ExplainPath, url.PathEscape(ns), url.PathEscape(resource), url.PathEscape(name))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w (is the manager running, and the address the one it serves metrics on?)", server, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusUnauthorized:
		return nil, errors.New("401 Unauthorized: pass a bearer token the API server accepts (--token or --token-file)")
	case http.StatusForbidden:
		return nil, errors.New("403 Forbidden: the token's user needs `get` on the non-resource URL /debug/autoscaler/* (a ClusterRole with nonResourceURLs)")
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return nil, fmt.Errorf("%s: %s", resp.Status, e.Error)
	}
	return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
}

// renderExplanation prints an explanation for a person: a header with the
// state, then one line per tick, oldest first.
func renderExplanation(w io.Writer, e autoscaler.Explanation) {
	fmt.Fprintf(w, "%s %s/%s: %s", e.Kind, e.Namespace, e.Name, e.State)
	if e.Message != "" {
		fmt.Fprintf(w, " (%s)", e.Message)
	}
	fmt.Fprintf(w, "\npolling every %s", time.Duration(e.PollingIntervalSeconds*float64(time.Second)))
	if !e.LastActivity.IsZero() {
		fmt.Fprintf(w, "; last activity %s", e.LastActivity.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if len(e.Decisions) == 0 {
		fmt.Fprintln(w, "no decisions yet")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tREPLICAS\tACTION\tTRIGGERS (value -> wants)\tLIMITS\tREASON")
	for _, r := range e.Decisions {
		replicas := fmt.Sprintf("%d -> %d", r.Current, r.Desired)
		switch {
		case r.Error != "":
			replicas += " (write failed)"
		case r.Desired != r.Current && !r.Written:
			replicas += " (not written)"
		}
		reason := r.Reason
		if r.Error != "" {
			reason += "; write failed: " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format("15:04:05"), replicas, r.Action, triggerCells(r.Triggers), limitCell(r.Decision), reason)
	}
	_ = tw.Flush()
}

func triggerCells(ts []scaling.TriggerDecision) string {
	if len(ts) == 0 {
		return "-"
	}
	cells := make([]string, len(ts))
	for i, t := range ts {
		if !t.Valid {
			cells[i] = t.Name + "=" + t.Problem
			continue
		}
		cells[i] = fmt.Sprintf("%s=%s -> %d", t.Name, strconv.FormatFloat(t.Value, 'g', 4, 64), t.Desired)
	}
	return strings.Join(cells, ", ")
}

func limitCell(d scaling.Decision) string {
	s := fmt.Sprintf("%d..%d", d.Min, d.Max)
	if d.Stabilization != "" {
		s += " " + d.Stabilization
	}
	if d.Limit != "" && d.Limit != scaling.LimitNone {
		s += " " + d.Limit
	}
	return s
}
