//go:build !nodev

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/profile"
)

// Bounds of `scaleplane dev load`.
const (
	maxLoadRPS = 10000
	// loadMaxInFlight bounds the requests waiting for an answer; a request
	// due while that many wait is counted as an error (dropped), so a slow
	// pod cannot make the load command grow without bound.
	loadMaxInFlight = 512
	// loadRequestTimeout bounds one request.
	loadRequestTimeout = 5 * time.Second
	// loadFollowInterval is how often the pods and the workload are read.
	loadFollowInterval = time.Second
	// loadActivityInterval spaces activity signals while no pod is ready.
	loadActivityInterval = 2 * time.Second
)

func devLoadMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane dev load", flag.ContinueOnError)
	var (
		rps        = fs.Float64("rps", 10, "requests per second, spread over the workload's ready pods")
		duration   = fs.Duration("duration", time.Minute, "how long to send")
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig of scaleplane dev's cluster; default $KUBECONFIG, then "+devDefaultKubeconfig+" when it exists (what scaleplane dev writes by default), then ~/.kube/config")
		configPath = fs.String("config", "", "component configuration naming the workload kinds; default: the sample profiles, as scaleplane dev")
		activity   = fs.String("activity", os.Getenv("SCALEPLANE_SERVER"), "scaleplane dev's metrics address (http://127.0.0.1:PORT, $SCALEPLANE_SERVER): while no pod is ready, POST /activity there, as a gateway holding requests would, so a workload at zero wakes; empty: the address the running scaleplane dev recorded in the kubeconfig's current context; \""+activityOff+"\": never")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: scaleplane dev load NAMESPACE/NAME [flags]
       scaleplane dev load NAMESPACE/RESOURCE/NAME [flags]

Sends requests to the ready pods of a workload of scaleplane dev (each pod
counts them in http_requests_total), following its pods as they come and go,
with one progress line: requests sent, the rate achieved, errors, the
workload's spec.replicas and its ready pods.

  scaleplane dev load default/web --rps 35 --duration 60s

Flags:
`)
		fs.PrintDefaults()
	}
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
	fail := func(code int, err error) int {
		fmt.Fprintf(os.Stderr, "scaleplane dev load: %v\n", err)
		return code
	}
	ns, resource, name, err := parseLoadTarget(target)
	if err != nil {
		return fail(2, err)
	}
	switch {
	case checkLoadRate(*rps) != nil:
		return fail(2, checkLoadRate(*rps))
	case *duration <= 0:
		return fail(2, fmt.Errorf("--duration %s: give a positive duration such as 60s", *duration))
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = loadKubeconfigPath(*kubeconfig, os.Getenv(clientcmd.RecommendedConfigPathEnvVar), fileExists)
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil)
	switch *activity {
	case activityOff:
		*activity = ""
	case "":
		raw, err := kc.RawConfig()
		if err != nil {
			return fail(2, fmt.Errorf("read kubeconfig (set --kubeconfig or $KUBECONFIG to the one scaleplane dev printed): %w", err))
		}
		if *activity, err = devServerOf(raw, devMarker.running); err != nil {
			return fail(2, err)
		}
	}
	if *activity != "" {
		if err := loopbackURL(*activity); err != nil {
			return fail(2, fmt.Errorf("--activity: %w", err))
		}
	}
	cfg := profile.SampleConfiguration()
	if *configPath != "" {
		var warnings []string
		cfg, warnings, err = app.LoadConfiguration(*configPath)
		for _, w := range warnings {
			fmt.Fprintf(os.Stderr, "scaleplane dev load: warning: %s\n", w)
		}
		if err != nil {
			return fail(2, err)
		}
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		return fail(2, err)
	}
	rc, err := kc.ClientConfig()
	if err != nil {
		return fail(2, fmt.Errorf("read kubeconfig (set --kubeconfig or $KUBECONFIG to the one scaleplane dev printed): %w", err))
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return fail(1, fmt.Errorf("client: %w", err))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	w, err := findWorkload(ctx, c, views, ns, resource, name)
	if err != nil {
		return fail(1, err)
	}
	l := newLoader(*rps, w, c, *activity)
	tty := term.IsTerminal(int(os.Stdout.Fd()))
	if err := l.run(ctx, *duration, os.Stdout, tty); err != nil {
		return fail(1, err)
	}
	return 0
}

// checkLoadRate refuses a rate that is not a number above 0 and at most
// maxLoadRPS. It is written so that NaN, for which every comparison is
// false, is refused too.
func checkLoadRate(rps float64) error {
	if !(rps > 0 && rps <= maxLoadRPS) {
		return fmt.Errorf("--rps %g: give a rate above 0 and at most %d", rps, maxLoadRPS)
	}
	return nil
}

// loadKubeconfigPath is the kubeconfig the load reads: the flag's, else
// (with $KUBECONFIG unset) the file scaleplane dev writes by default when it
// exists, so that a new terminal in the same folder finds the running dev
// without exporting anything; "" leaves it to the default loading rules.
func loadKubeconfigPath(flag, env string, exists func(string) bool) string {
	switch {
	case flag != "":
		return flag
	case env == "" && exists(devDefaultKubeconfig):
		return devDefaultKubeconfig
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// activityOff is the --activity value that sends no activity signal.
const activityOff = "off"

// devServerOf is the metrics address that the scaleplane dev whose context
// is current in cfg recorded there (devServerExtension), so that a load run
// from a new terminal wakes a workload at zero without being told where.
// Without one it fails at once saying what to set: a load that can never
// wake its workload would otherwise count its whole duration as "no pod
// ready" and send nothing. running reports whether a dev run still runs.
func devServerOf(cfg clientcmdapi.Config, running func(devMarker) bool) (string, error) {
	const set = "set SCALEPLANE_SERVER (or --activity) to the http://127.0.0.1:PORT that scaleplane dev printed, or --activity " + activityOff + " to send only to ready pods and never wake a workload at zero"
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("no address to signal activity to: the kubeconfig has no current context; %s", set)
	}
	m, ok := marker(ctx.Extensions)
	if !ok {
		return "", fmt.Errorf("no address to signal activity to: the kubeconfig's current context %q is not scaleplane dev's; %s", cfg.CurrentContext, set)
	}
	if !running(m) {
		return "", fmt.Errorf("the kubeconfig's current context %q belongs to a scaleplane dev (pid %d) that no longer runs: start scaleplane dev again, or %s", cfg.CurrentContext, m.PID, set)
	}
	var srv devServer
	if u, ok := ctx.Extensions[devServerExtension].(*runtime.Unknown); ok {
		_ = json.Unmarshal(u.Raw, &srv)
	}
	if srv.MetricsURL == "" {
		return "", fmt.Errorf("no address to signal activity to: the scaleplane dev of context %q (pid %d) recorded none, as versions before this one did; %s", cfg.CurrentContext, m.PID, set)
	}
	return srv.MetricsURL, nil
}

// parseLoadTarget reads NAMESPACE/NAME or NAMESPACE/RESOURCE/NAME.
func parseLoadTarget(s string) (ns, resource, name string, err error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], "", parts[1], nil
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], nil
	}
	return "", "", "", fmt.Errorf("workload %q: give NAMESPACE/NAME (e.g. default/web) or NAMESPACE/RESOURCE/NAME (e.g. default/rackedclusters/web)", s)
}

// loopbackURL refuses an address off this machine: dev's servers are on
// 127.0.0.1, and the load command sends nothing anywhere else.
func loopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http(s) address; give the one scaleplane dev printed (http://127.0.0.1:PORT)", s)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not on 127.0.0.1; the load command only talks to scaleplane dev on this machine", s)
	}
	return nil
}

// loadWorkload is the workload the load is for.
type loadWorkload struct {
	view     *profile.Compiled
	resource string
	nn       types.NamespacedName
	selector k8slabels.Selector
}

// findWorkload finds NAME among the profiled kinds (or RESOURCE's); a name
// held by two kinds must be told apart by RESOURCE.
func findWorkload(ctx context.Context, c client.Reader, views []*profile.Compiled, ns, resource, name string) (*loadWorkload, error) {
	var found []*loadWorkload
	var names []string
	for _, v := range views {
		gvr := v.GVR()
		names = append(names, gvr.Resource)
		if resource != "" && !matchesResource(v, resource) {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v.GVK())
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("get %s %s/%s: %w", gvr.Resource, ns, name, err)
		}
		set := k8slabels.Set{}
		for k, val := range v.Spec().Pods.Labels {
			if strings.Contains(val, v1alpha1.MemberGroupPlaceholder) {
				continue
			}
			set[k] = strings.ReplaceAll(val, v1alpha1.NamePlaceholder, name)
		}
		if len(set) == 0 {
			return nil, fmt.Errorf("%s %s/%s: its profile names no pod labels (pods.labels), so its pods cannot be found", gvr.Resource, ns, name)
		}
		found = append(found, &loadWorkload{view: v, resource: gvr.Resource, nn: types.NamespacedName{Namespace: ns, Name: name}, selector: k8slabels.SelectorFromSet(set)})
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var alts []string
		for _, f := range found {
			alts = append(alts, ns+"/"+f.resource+"/"+name)
		}
		return nil, fmt.Errorf("%s/%s names %d workloads; say which: %s", ns, name, len(found), strings.Join(alts, " or "))
	case resource != "":
		return nil, fmt.Errorf("no %s named %s in namespace %s (profiled: %s)", resource, name, ns, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no workload named %s in namespace %s among %s", name, ns, strings.Join(names, ", "))
}

func matchesResource(v *profile.Compiled, resource string) bool {
	gvr, gvk := v.GVR(), v.GVK()
	return resource == gvr.Resource || resource == gvr.Resource+"."+gvr.Group || resource == strings.ToLower(gvk.Kind)
}

// loader sends rps requests per second over the ready pods of one
// workload, round robin, following them as they come and go.
type loader struct {
	rps      float64
	w        *loadWorkload
	c        client.Reader
	activity string
	http     *http.Client
	now      func() time.Time
	// dispatch sends one request to url; run makes it asynchronous and
	// bounded, tests make it synchronous.
	dispatch func(url string)

	// lastWake is when activity was last signalled (refresh only).
	lastWake time.Time

	targets  atomic.Pointer[[]string]
	rr       uint64
	inFlight atomic.Int64

	sent, ok, errs, noPod atomic.Int64
	state                 atomic.Pointer[loadState]
}

// loadState is what the follower last read.
type loadState struct {
	replicas   string
	ready, all int
	skipped    int
	wake       string
}

func newLoader(rps float64, w *loadWorkload, c client.Reader, activity string) *loader {
	l := &loader{
		rps: rps, w: w, c: c, activity: strings.TrimSuffix(activity, "/"), now: time.Now,
		http: &http.Client{
			Timeout: loadRequestTimeout,
			Transport: &http.Transport{
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     30 * time.Second,
				// Requests go to 127.0.0.1 only: no proxy.
				Proxy: nil,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	l.state.Store(&loadState{replicas: "?"})
	return l
}

// step dispatches the requests due after elapsed (rps * elapsed in all),
// given done already dispatched, and returns the new total. A request due
// while no pod is ready is counted, not sent.
func (l *loader) step(elapsed time.Duration, done int64) int64 {
	due := int64(l.rps * elapsed.Seconds())
	targets := l.targets.Load()
	for ; done < due; done++ {
		if targets == nil || len(*targets) == 0 {
			l.noPod.Add(1)
			continue
		}
		url := (*targets)[l.rr%uint64(len(*targets))]
		l.rr++
		l.sent.Add(1)
		l.dispatch(url)
	}
	return done
}

// send is one request; its outcome is counted.
func (l *loader) send(ctx context.Context, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = l.http.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}
	}
	if err != nil {
		l.errs.Add(1)
		return
	}
	l.ok.Add(1)
}

// readyTargets are the work URLs of the pods that are Running and Ready
// on a loopback address, in name order; skipped counts ready pods off
// loopback (not dev's), which are never sent anything.
func readyTargets(pods []corev1.Pod) (urls []string, ready, skipped int) {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !isReady(p) {
			continue
		}
		ready++
		ip := net.ParseIP(p.Status.PodIP)
		port := podPort(p)
		if ip == nil || !ip.IsLoopback() || port == 0 {
			skipped++
			continue
		}
		urls = append(urls, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))+"/")
	}
	return urls, ready, skipped
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podPort is the container port named http, else the first TCP port.
func podPort(p *corev1.Pod) int32 {
	var first int32
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
				continue
			}
			if port.Name == "http" {
				return port.ContainerPort
			}
			if first == 0 {
				first = port.ContainerPort
			}
		}
	}
	return first
}

// follow refreshes every interval until ctx ends.
func (l *loader) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(loadFollowInterval):
		}
		l.refresh(ctx)
	}
}

// refresh reads the workload's pods and replicas, and signals activity
// while no pod is ready.
func (l *loader) refresh(ctx context.Context) {
	prev := l.state.Load()
	st := &loadState{replicas: "?", wake: prev.wake}
	var pods corev1.PodList
	if err := l.c.List(ctx, &pods, client.InNamespace(l.w.nn.Namespace), client.MatchingLabelsSelector{Selector: l.w.selector}); err == nil {
		urls, ready, skipped := readyTargets(pods.Items)
		st.ready, st.all, st.skipped = ready, len(pods.Items), skipped
		l.targets.Store(&urls)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(l.w.view.GVK())
	if err := l.c.Get(ctx, l.w.nn, u); err == nil {
		if w, _ := l.w.view.Read(u); w.Replicas != nil {
			st.replicas = strconv.Itoa(int(*w.Replicas))
		} else {
			st.replicas = "unset"
		}
	} else if apierrors.IsNotFound(err) {
		st.replicas = "deleted"
	}
	if t := l.targets.Load(); (t == nil || len(*t) == 0) && l.activity != "" && l.now().Sub(l.lastWake) >= loadActivityInterval {
		l.lastWake = l.now()
		st.wake = l.signalActivity(ctx)
	}
	l.state.Store(st)
}

// signalActivity posts activity for the workload, as a gateway holding a
// request for a workload at zero does, and says how it went.
func (l *loader) signalActivity(ctx context.Context) string {
	url := fmt.Sprintf("%s/activity/%s/%s/%s", l.activity, l.w.nn.Namespace, l.w.resource, l.w.nn.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "activity: " + err.Error()
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return "activity: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return fmt.Sprintf("no pod ready: POST /activity -> %d", resp.StatusCode)
}

// run sends for d (or until ctx ends) and prints progress to out: one line
// redrawn in place on a terminal, a line every few seconds otherwise, and
// a summary.
func (l *loader) run(ctx context.Context, d time.Duration, out io.Writer, tty bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	reqCtx, stopRequests := context.WithCancel(context.Background())
	defer stopRequests()
	l.dispatch = func(url string) {
		if l.inFlight.Load() >= loadMaxInFlight {
			l.errs.Add(1)
			return
		}
		l.inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.inFlight.Add(-1)
			l.send(reqCtx, url)
		}()
	}
	followDone := make(chan struct{})
	if l.w != nil {
		// Pods first, so the first requests have somewhere to go.
		l.refresh(ctx)
		go func() {
			defer close(followDone)
			l.follow(ctx)
		}()
		fmt.Fprintf(out, "sending %g requests/s to the ready pods of %s %s for %s\n", l.rps, l.w.view.GVK().Kind, l.w.nn, d)
	} else {
		// Fixed targets (the benchmark).
		close(followDone)
	}
	start := l.now()
	pace := time.NewTicker(10 * time.Millisecond)
	defer pace.Stop()
	every := 5 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	report := time.NewTicker(every)
	defer report.Stop()
	var done int64
	rate := newRateWindow(5 * time.Second)
	rate.add(start, 0)
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-pace.C:
			done = l.step(l.now().Sub(start), done)
		case <-report.C:
			now := l.now()
			line := l.progress(now.Sub(start), d, rate.add(now, l.ok.Load()))
			if tty {
				fmt.Fprint(out, "\r\x1b[K"+line)
			} else {
				fmt.Fprintln(out, line)
			}
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// What fell due in the last tick of the duration.
		l.step(d, done)
	}
	// Answers still on their way count; after a grace, they are cut.
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(loadRequestTimeout):
		stopRequests()
		<-waited
	}
	<-followDone
	elapsed := l.now().Sub(start)
	if tty {
		fmt.Fprint(out, "\r\x1b[K")
	}
	fmt.Fprintln(out, l.summary(elapsed))
	return nil
}

// progress is the live line.
func (l *loader) progress(elapsed, d time.Duration, rate float64) string {
	st := l.state.Load()
	line := fmt.Sprintf("%3ds/%ds  sent %d  rate %.1f/s  errors %d", int(elapsed.Seconds()), int(d.Seconds()), l.sent.Load(), rate, l.errs.Load())
	if n := l.noPod.Load(); n > 0 {
		line += fmt.Sprintf("  no pod %d", n)
	}
	line += fmt.Sprintf("  replicas %s  ready pods %d/%d", st.replicas, st.ready, st.all)
	if st.skipped > 0 {
		line += fmt.Sprintf(" (%d not on 127.0.0.1, skipped)", st.skipped)
	}
	if st.ready == 0 && st.wake != "" {
		line += "  " + st.wake
	}
	return line
}

// summary is the last line: requests due (the rate asked), how many were
// sent and how many fell while no pod was ready, and their outcome.
func (l *loader) summary(elapsed time.Duration) string {
	secs := max(elapsed.Seconds(), 1e-9)
	sent, noPod := l.sent.Load(), l.noPod.Load()
	return fmt.Sprintf("done in %s: %d requests due (%.1f/s, asked %g/s): %d sent, %d while no pod was ready; %d answered, %d errors; replicas %s",
		elapsed.Round(100*time.Millisecond), sent+noPod, float64(sent+noPod)/secs, l.rps, sent, noPod, l.ok.Load(), l.errs.Load(), l.state.Load().replicas)
}

// rateWindow is the rate of a counter over the last span.
type rateWindow struct {
	span    time.Duration
	samples []rateSample
}

type rateSample struct {
	at time.Time
	n  int64
}

func newRateWindow(span time.Duration) *rateWindow { return &rateWindow{span: span} }

// add records n at now and returns the rate since the oldest sample
// within the span.
func (r *rateWindow) add(now time.Time, n int64) float64 {
	r.samples = append(r.samples, rateSample{now, n})
	for len(r.samples) > 2 && now.Sub(r.samples[1].at) >= r.span {
		r.samples = r.samples[1:]
	}
	first := r.samples[0]
	dt := now.Sub(first.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(n-first.n) / dt
}
