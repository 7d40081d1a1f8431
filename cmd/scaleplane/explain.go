package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/scaling"
)

// scalingsResource is the Scaling kind's resource.
var scalingsResource = v1alpha1.GroupVersion.WithResource("scalings")

// explainMain prints what scaleplane does with a workload and why, read
// from the workload's Scaling through the kubeconfig, like any kubectl
// command: no port-forward, no token.
func explainMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane explain", flag.ContinueOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config or in-cluster")
		systemNS   = fs.String("scaleplane-namespace", "scaleplane-system", "namespace scaleplane runs in, where the Scalings of cluster-scoped workloads live")
		asJSON     = fs.Bool("json", false, "print the Scaling as JSON instead of a summary")
		timeout    = fs.Duration("timeout", 10*time.Second, "how long to wait for the API server")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: scaleplane explain NAMESPACE/RESOURCE/NAME [flags]
       kubectl scaleplane explain NAMESPACE/RESOURCE/NAME [flags]

Prints what scaleplane does with one workload and why, from its Scaling
object (kubectl get scalings): who sets the count, the conditions, each
trigger's last value and threshold, and the last decisions that changed the
count. RESOURCE names the workload's kind as kubectl does: its resource
(rackedclusters), a short name (rcl) or its kind (rackedcluster), each
optionally with its group (rackedclusters.samples.scaleplane.io).
For a cluster-scoped kind, NAMESPACE is ignored: its Scalings live in
--scaleplane-namespace.

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
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	s, raw, err := fetchScaling(ctx, cfg, *systemNS, ns, resource, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane explain: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(raw, "", "  ")
		fmt.Println(string(b))
		return 0
	}
	renderScaling(os.Stdout, s, time.Now())
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

// fetchScaling finds the kind RESOURCE names through discovery and reads
// the workload's Scaling, turning every failure into a message that says
// what to change.
func fetchScaling(ctx context.Context, cfg *rest.Config, systemNS, ns, resource, name string) (*v1alpha1.Scaling, map[string]any, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("build a discovery client: %w", err)
	}
	mapping, err := resolveResource(discoveryMapper(dc), resource)
	if err != nil {
		return nil, nil, err
	}
	gvk := mapping.GroupVersionKind
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		ns = systemNS
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("build a client: %w", err)
	}
	scalingName := autoscaler.ScalingName(name, gvk.GroupKind())
	u, err := dyn.Resource(scalingsResource).Namespace(ns).Get(ctx, scalingName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource"):
		return nil, nil, errors.New("scalings.scaleplane.io is not served: install scaleplane's CRDs (config/crd, or the Helm chart)")
	case apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("no Scaling %s/%s: scaleplane has not written one for %s %s/%s; check the name, that the kind is profiled and that scaleplane runs", ns, scalingName, gvk.Kind, ns, name)
	case apierrors.IsForbidden(err):
		return nil, nil, fmt.Errorf("%w; you need get on scalings.scaleplane.io in %s", err, ns)
	case err != nil:
		return nil, nil, fmt.Errorf("read Scaling %s/%s: %w", ns, scalingName, err)
	}
	s := &v1alpha1.Scaling{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, nil, fmt.Errorf("read Scaling %s/%s: %w", ns, scalingName, err)
	}
	return s, u.Object, nil
}

// discoveryMapper is kubectl's RESTMapper over dc: discovery's resources,
// with the short names they declare expanded.
func discoveryMapper(dc discovery.DiscoveryInterface) meta.RESTMapper {
	cached := memory.NewMemCacheClient(dc)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
}

// resolveResource finds the kind a RESOURCE argument names, as kubectl
// reads it: a plural, a singular or kind name, a short name, each
// optionally with its group (rackedclusters.samples.scaleplane.io) or with
// version and group (rackedclusters.v1alpha1.samples.scaleplane.io).
func resolveResource(mapper meta.RESTMapper, resource string) (*meta.RESTMapping, error) {
	fully, gr := schema.ParseResourceArg(strings.ToLower(resource))
	var gvk schema.GroupVersionKind
	var err error
	if fully != nil {
		gvk, err = mapper.KindFor(*fully)
	}
	if fully == nil || err != nil {
		gvk, err = mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w; name the workload's resource as kubectl api-resources lists it (name, short name or kind, optionally .group)", resource, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", resource, err)
	}
	return mapping, nil
}

// renderScaling prints a Scaling for a person: who sets the count and
// why, the conditions, the triggers, then the decisions oldest first.
func renderScaling(w io.Writer, s *v1alpha1.Scaling, now time.Time) {
	st := s.Status
	ref := s.Spec.TargetRef
	where := ref.Name
	if len(s.OwnerReferences) > 0 {
		where = s.Namespace + "/" + ref.Name
	}
	mode := string(st.Mode)
	if mode == "" {
		mode = "unknown"
	}
	fmt.Fprintf(w, "%s %s: %s\n", ref.Kind, where, mode)
	fmt.Fprintf(w, "replicas %s, desired %s, range %s..%s", count(st.Replicas), count(st.DesiredReplicas), count(st.MinReplicas), count(st.MaxReplicas))
	if st.LastScaleTime != nil {
		fmt.Fprintf(w, "; last scale %s (%s ago)", st.LastScaleTime.UTC().Format(time.RFC3339), now.Sub(st.LastScaleTime.Time).Round(time.Second))
	}
	if st.LastActivity != nil {
		fmt.Fprintf(w, "; last activity %s", st.LastActivity.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range st.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, dash(c.Message))
	}
	_ = tw.Flush()
	if len(st.Triggers) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TRIGGER\tTYPE\tVALUE\tTHRESHOLD\tACTIVE\tHEALTH\tPROBLEM")
		for _, t := range st.Triggers {
			health := dash(t.Health)
			if t.Failures > 0 {
				health = fmt.Sprintf("%s (%d in a row)", health, t.Failures)
			}
			if t.Fallback {
				health += ", fallback"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", t.Name, dash(t.Type), dash(t.Value), dash(t.Threshold), t.Active, health, dash(t.Problem))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w)
	held := ""
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ScalingActive); c != nil && slices.Contains([]string{scaling.StabilizedScaleDown, scaling.StabilizedScaleUp, scaling.LimitScaleUp, scaling.LimitScaleDown}, c.Reason) {
		held = c.Message
	}
	if len(st.Decisions) == 0 {
		if held != "" {
			fmt.Fprintf(w, "now: %s\n", held)
			return
		}
		fmt.Fprintln(w, "no decisions that changed the count yet")
		return
	}
	defer func() {
		if held != "" {
			fmt.Fprintf(w, "now: %s\n", held)
		}
	}()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tREPLICAS\tACTION\tREASON")
	for _, d := range st.Decisions {
		replicas := fmt.Sprintf("%d -> %d", d.Current, d.Desired)
		reason := d.Reason
		if d.Error != "" {
			replicas += " (write failed)"
			reason += "; write failed: " + d.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Time.UTC().Format("15:04:05"), replicas, d.Action, reason)
	}
	_ = tw.Flush()
}

func count(p *int32) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
