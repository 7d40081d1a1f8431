package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/convert"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// Exit codes of scaleplane convert.
const (
	convertComplete   = 0
	convertFailed     = 1 // the cluster could not be read
	convertBadInput   = 2
	convertIncomplete = 3
)

var scaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

func convertMain(args []string) int {
	return convertCmd(context.Background(), args, os.Stdout, os.Stderr)
}

// sourcedObject is a ScaledObject and where it was read.
type sourcedObject struct {
	from string
	so   convert.ScaledObject
}

// convertCmd prints, for every ScaledObject read, the scaleplane config of
// its target as an object for server-side apply, and lists on stderr (and
// in the output's comments) what was not converted.
func convertCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scaleplane convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files repeated
	fs.Var(&files, "f", "a file of ScaledObjects (YAML or JSON, several documents or a List allowed), - for stdin; repeatable")
	configPath := fs.String("config", "", "component configuration file: its profiles say where each kind keeps its scale config, its autoscaler.prometheusURL which server prometheus triggers may name")
	source := fs.String("source", scaling.SourcePrometheus, "source of converted prometheus triggers: prometheus (the remote server of autoscaler.prometheusURL) or promql (the embedded store)")
	kubeconfig := fs.String("kubeconfig", "", "read ScaledObjects from the cluster of this kubeconfig (empty with -n or -A: in-cluster or $KUBECONFIG)")
	namespace := fs.String("n", "", "read the ScaledObjects of this namespace from the cluster")
	all := fs.Bool("A", false, "read the ScaledObjects of every namespace from the cluster")
	fs.BoolVar(all, "all-namespaces", false, "the same as -A")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: scaleplane convert (-f FILE... | -n NAMESPACE | -A) [--kubeconfig FILE] [--config FILE] [--source prometheus|promql]

Reads KEDA ScaledObjects and prints, for each, its target workload with the
equivalent scaleplane scale config (the annotation scaleplane.io/scale-config,
or the spec path of the kind's profile with --config) and scaleplane's pause
annotations. Apply the output, then delete the ScaledObjects (scaleplane
stands down while one targets the workload):

  scaleplane convert -f keda.yaml > scaleplane.yaml
  kubectl apply --server-side --field-manager=scaleplane-convert -f scaleplane.yaml

Every config printed passes scaleplane's admission rules. What could not be
converted is listed, with the reason, on stderr and in the output's comments.
Exit 0: everything converted; 3: something was not converted; 2: bad input
or usage; 1: the cluster could not be read.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return convertComplete
		}
		return convertBadInput
	}
	fromCluster := *namespace != "" || *all
	if fs.NArg() > 0 || (len(files) == 0) == !fromCluster || (*namespace != "" && *all) {
		fmt.Fprintln(stderr, "scaleplane convert: give -f FILE (repeatable), or one of -n NAMESPACE and -A to read the cluster")
		return convertBadInput
	}
	if *source != scaling.SourcePrometheus && *source != scaling.SourcePromQL {
		fmt.Fprintf(stderr, "scaleplane convert: --source %q: use prometheus or promql\n", *source)
		return convertBadInput
	}
	cv, err := newConverter(*configPath, *source)
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane convert: %v\n", err)
		return convertBadInput
	}
	var objs []sourcedObject
	if fromCluster {
		if objs, err = readClusterScaledObjects(ctx, *kubeconfig, *namespace); err != nil {
			fmt.Fprintf(stderr, "scaleplane convert: %v\n", err)
			return convertFailed
		}
	}
	for _, f := range files {
		got, err := readScaledObjectFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane convert: %v\n", err)
			return convertBadInput
		}
		objs = append(objs, got...)
	}
	if len(objs) == 0 {
		fmt.Fprintln(stderr, "scaleplane convert: no ScaledObject found")
		if fromCluster {
			return convertComplete
		}
		return convertBadInput
	}
	fmt.Fprintln(stdout, "# scaleplane convert: apply with kubectl apply --server-side --field-manager=scaleplane-convert -f FILE")
	code := convertComplete
	for _, o := range objs {
		if !cv.print(stdout, stderr, o) {
			code = convertIncomplete
		}
	}
	return code
}

// converter holds what every conversion is checked against.
type converter struct {
	opts     convert.Options
	profiles []*profile.Compiled
	sources  *scaling.Sources
}

func newConverter(configPath, source string) (*converter, error) {
	cfg := &configv1alpha2.Configuration{}
	if configPath != "" {
		// The configuration's own warnings are config check's business.
		var err error
		if cfg, _, err = app.LoadConfiguration(configPath); err != nil {
			return nil, err
		}
	} else {
		cfg.Default()
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		return nil, err
	}
	// Without a configuration, assume the server of the ScaledObjects will be
	// autoscaler.prometheusURL.
	sources, err := app.ValidationSources(cfg, configPath == "")
	if err != nil {
		return nil, err
	}
	return &converter{opts: convert.Options{QuerySource: source, PrometheusURL: cfg.Autoscaler.PrometheusURL, Configured: configPath != ""}, profiles: views, sources: sources}, nil
}

// view is the profile of the target's group and kind, nil for none.
func (cv *converter) view(apiVersion, kind string) *profile.Compiled {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	for _, p := range cv.profiles {
		if p.GVK().Group == gv.Group && p.GVK().Kind == kind {
			return p
		}
	}
	return nil
}

// print writes one conversion and reports whether it is complete.
func (cv *converter) print(stdout, stderr io.Writer, o sourcedObject) bool {
	so := &o.so
	id := so.Name
	if so.Namespace != "" {
		id = so.Namespace + "/" + so.Name
	}
	res := convert.Convert(so, cv.opts)
	view := cv.view(res.APIVersion, res.Kind)
	if view == nil && !res.KeepScaledObject {
		ref := field.NewPath("spec", "scaleTargetRef")
		if cv.opts.Configured {
			res.NotConverted = append(res.NotConverted, convert.Problem{Field: ref.String(), Reason: fmt.Sprintf(
				"the configuration has no profile for %s %s, so scaleplane would not read its scale config: add a profile for the kind to the configuration and convert again", res.APIVersion, res.Kind)})
			res.KeepScaledObject = true
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: scaleplane reads the annotation %s of a %s only if its profile names that annotation; convert with --config to check against your profiles",
				ref, v1alpha1.AnnotationScaleConfig, res.Kind))
		}
	}
	// Nothing to apply is not checked: its errors would be about a config
	// nobody applies.
	var obj *unstructured.Unstructured
	var verrs field.ErrorList
	if !res.KeepScaledObject {
		obj, verrs = convert.Render(res, view, cv.sources)
	}
	for _, e := range verrs {
		res.NotConverted = append(res.NotConverted, convert.Problem{Field: e.Field, Reason: "the converted config is refused by scaleplane's admission: " + e.ErrorBody()})
	}
	fmt.Fprintf(stdout, "---\n# ScaledObject %s (%s) -> %s %s\n", id, o.from, res.Kind, res.Name)
	for _, n := range res.Notes {
		fmt.Fprintf(stdout, "# note: %s\n", n)
	}
	for _, p := range res.NotConverted {
		fmt.Fprintf(stdout, "# not converted: %s: %s\n", p.Field, p.Reason)
		fmt.Fprintf(stderr, "scaleplane convert: ScaledObject %s: %s not converted: %s\n", id, p.Field, p.Reason)
	}
	switch {
	case res.KeepScaledObject:
		fmt.Fprintln(stdout, "# nothing converted: keep the ScaledObject in KEDA")
		return false
	case len(verrs) > 0:
		fmt.Fprintln(stdout, "# no object printed: fix the ScaledObject and convert again")
		return false
	}
	if len(res.NotConverted) > 0 {
		fmt.Fprintln(stdout, "# incomplete: the workload behaves as the ScaledObject only where listed above as converted")
	}
	ns := ""
	if so.Namespace != "" {
		ns = " -n " + so.Namespace
	}
	fmt.Fprintf(stdout, "# then: kubectl delete scaledobject%s %s\n", ns, so.Name)
	out, err := yaml.Marshal(obj.Object)
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane convert: ScaledObject %s: %v\n", id, err)
		return false
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "scaleplane convert: ScaledObject %s: write: %v\n", id, err)
		return false
	}
	return len(res.NotConverted) == 0
}

// readScaledObjectFile reads every ScaledObject of a YAML or JSON stream;
// documents of other kinds are refused.
func readScaledObjectFile(path string) ([]sourcedObject, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []sourcedObject
	for i := 0; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		got, err := decodeScaledObjects(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		for _, so := range got {
			out = append(out, sourcedObject{from: fmt.Sprintf("%s#%d", path, i+1), so: so})
		}
	}
}

// decodeScaledObjects decodes one document, a ScaledObject or a List of
// them, strictly: a field KEDA does not have is an error, not a silent
// drop.
func decodeScaledObjects(doc []byte) ([]convert.ScaledObject, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "List" || strings.HasSuffix(tm.Kind, "List") {
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(doc, &l); err != nil {
			return nil, err
		}
		var out []convert.ScaledObject
		for i, it := range l.Items {
			got, err := decodeScaledObjects(it)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, got...)
		}
		return out, nil
	}
	if tm.Kind != "ScaledObject" || !strings.HasPrefix(tm.APIVersion, "keda.sh/") {
		return nil, fmt.Errorf("%s %s is not a keda.sh ScaledObject", tm.APIVersion, tm.Kind)
	}
	var so convert.ScaledObject
	if err := yaml.UnmarshalStrict(doc, &so); err != nil {
		return nil, fmt.Errorf("ScaledObject: %w", err)
	}
	if so.Spec.ScaleTargetRef.Name == "" {
		return nil, fmt.Errorf("ScaledObject %s: spec.scaleTargetRef.name is required", so.Name)
	}
	return []convert.ScaledObject{so}, nil
}

// readClusterScaledObjects lists the ScaledObjects of namespace (every
// namespace when empty), sorted by namespace and name, through the same
// decoder as files.
func readClusterScaledObjects(ctx context.Context, kubeconfig, namespace string) ([]sourcedObject, error) {
	rc, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return listScaledObjects(ctx, dc, namespace)
}

func listScaledObjects(ctx context.Context, dc dynamic.Interface, namespace string) ([]sourcedObject, error) {
	list, err := dc.Resource(scaledObjectGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ScaledObjects: %w", err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	var out []sourcedObject
	for _, it := range items {
		b, err := json.Marshal(it.Object)
		if err != nil {
			return nil, err
		}
		got, err := decodeScaledObjects(b)
		if err != nil {
			return nil, fmt.Errorf("ScaledObject %s/%s: %w", it.GetNamespace(), it.GetName(), err)
		}
		for _, so := range got {
			out = append(out, sourcedObject{from: "cluster", so: so})
		}
	}
	return out, nil
}
