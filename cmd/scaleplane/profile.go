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
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/webhooks"
)

// AggregateToScaleplaneLabel on a ClusterRole adds its rules to scaleplane's
// aggregated role (config/rbac/aggregated_role.yaml).
const AggregateToScaleplaneLabel = "rbac.scaleplane.io/aggregate-to-scaleplane"

func profileMain(args []string) int {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprintln(os.Stderr, "Usage: scaleplane profile init (--crd NAME | -f FILE) [--version V] [--kubeconfig FILE]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	return profileInit(args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// profileInit prints a ScaleProfile and its ClusterRole for each CRD with a
// /scale subresource it reads, and says on stderr what it inferred and what
// it could not. Exit 0 when every CRD gave a usable profile, 1 when one did
// not, 2 for bad usage.
func profileInit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scaleplane profile init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		crdName    = fs.String("crd", "", "name of a CRD served by the cluster, e.g. leaderworkersets.leaderworkerset.x-k8s.io")
		file       = fs.String("f", "", "file of CRDs (YAML or JSON, several documents allowed), or a folder of such files; - reads standard input")
		version    = fs.String("version", "", "the CRD version to profile; default the storage version (or the first served one with /scale)")
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file for --crd; empty means $KUBECONFIG or in-cluster")
		timeout    = fs.Duration("timeout", 30*time.Second, "how long to wait for the API server with --crd")
		handleName = fs.String("name", "", "for a CRD without /scale: the name of the workload the printed ScaleHandle scales (and of the handle); default the kind in lower case")
	)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: scaleplane profile init (--crd NAME | -f FILE) [flags]

Prints a ScaleProfile for a CRD with a /scale subresource, with a ClusterRole
granting scaleplane what it needs on the kind (aggregated into scaleplane's
role). For a CRD without /scale whose spec has a list of member groups
(racks), it prints a ScaleHandle for one workload instead (--name), with
the ScaleHandle kind's ScaleProfile and the ClusterRole. Ready for:

  scaleplane profile init --crd leaderworkersets.leaderworkerset.x-k8s.io | kubectl apply --server-side -f -

What was inferred, and why, and what could not be, goes to standard error.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if (*crdName == "") == (*file == "") || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "scaleplane profile init: give exactly one of --crd NAME (a CRD in the cluster) and -f FILE (a CRD file)")
		return 2
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var err error
	if *file != "" {
		crds, err = readCRDFile(*file, stdin)
	} else {
		var crd *apiextensionsv1.CustomResourceDefinition
		crd, err = getCRD(*kubeconfig, *crdName, *timeout)
		crds = append(crds, crd)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane profile init: %v\n", err)
		return 1
	}
	if len(crds) == 0 {
		fmt.Fprintf(stderr, "scaleplane profile init: %s holds no CustomResourceDefinition\n", *file)
		return 1
	}
	code := 0
	first := true
	for _, crd := range crds {
		if err := checkCRDNames(crd); err != nil {
			fmt.Fprintf(stderr, "scaleplane profile init: %v\n", err)
			code = 1
			continue
		}
		in, err := profile.Infer(crd, *version)
		if err != nil && !servesScale(crd, *version) {
			// A kind without /scale: a ScaleHandle can hold its count
			// when it has member groups to fan it out to.
			hin, herr := profile.InferHandle(crd, *version)
			if herr == nil {
				out, rerr := renderHandle(crd, hin, *handleName)
				if rerr == nil {
					if !first {
						fmt.Fprintln(stdout, "---")
					}
					first = false
					fmt.Fprint(stdout, out)
					writeNotes(stderr, crd.Name, hin.Inferred, hin.Missing)
					continue
				}
				herr = rerr
			}
			err = fmt.Errorf("%w; no ScaleHandle either: %v", err, herr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane profile init: %v\n", err)
			code = 1
			continue
		}
		out, err := renderProfile(crd, in)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane profile init: CRD %s: %v\n", crd.Name, err)
			code = 1
			continue
		}
		if !first {
			fmt.Fprintln(stdout, "---")
		}
		first = false
		fmt.Fprint(stdout, out)
		writeNotes(stderr, crd.Name, in.Inferred, in.Missing)
	}
	return code
}

// writeNotes says what was inferred from one CRD and what was not.
func writeNotes(stderr io.Writer, crd string, inferred, missing []string) {
	fmt.Fprintf(stderr, "CRD %s:\n", crd)
	for _, s := range inferred {
		fmt.Fprintf(stderr, "  inferred: %s\n", s)
	}
	for _, s := range missing {
		fmt.Fprintf(stderr, "  not inferred: %s\n", s)
	}
}

// servesScale reports whether crd serves version (any version when empty)
// with a /scale subresource.
func servesScale(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Name == version) && v.Subresources != nil && v.Subresources.Scale != nil {
			return true
		}
	}
	return false
}

// readCRDFile reads every CustomResourceDefinition in a YAML or JSON file
// of one or more documents, or in the .yaml, .yml and .json files of a
// folder (not its subfolders); other kinds are skipped.
func readCRDFile(name string, stdin io.Reader) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		entries, err := os.ReadDir(name)
		if err != nil {
			return nil, fmt.Errorf("read CRDs: %w", err)
		}
		var out []*apiextensionsv1.CustomResourceDefinition
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			crds, err := readCRDFile(filepath.Join(name, e.Name()), nil)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
		return out, nil
	}
	r := io.Reader(stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read CRDs: %w", err)
		}
		defer f.Close()
		r = f
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("read %s, document %d: a CustomResourceDefinition of %s; only %s is read", name, i, tm.APIVersion, apiextensionsv1.SchemeGroupVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		out = append(out, crd)
	}
}

// checkCRDNames refuses a CRD whose names the API server would refuse
// (apiextensions' own rules): they end up in the ScaleProfile, the
// ClusterRole and the comments profile init prints, and one holding a line
// break and "---" would print a document of its own choosing into what the
// user pipes to kubectl apply.
func checkCRDNames(crd *apiextensionsv1.CustomResourceDefinition) error {
	var errs field.ErrorList
	names := crd.Spec.Names
	if msgs := validation.IsDNS1123Subdomain(crd.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, strings.Join(msgs, "; ")))
	} else if want := names.Plural + "." + crd.Spec.Group; crd.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, fmt.Sprintf("must be spec.names.plural+\".\"+spec.group (%q)", want)))
	}
	sp := field.NewPath("spec")
	if msgs := validation.IsDNS1123Subdomain(crd.Spec.Group); len(msgs) > 0 {
		errs = append(errs, field.Invalid(sp.Child("group"), crd.Spec.Group, strings.Join(msgs, "; ")))
	}
	for _, n := range []struct {
		name, value string
	}{{"plural", names.Plural}, {"singular", names.Singular}, {"kind", strings.ToLower(names.Kind)}, {"listKind", strings.ToLower(names.ListKind)}} {
		if n.value == "" && (n.name == "singular" || n.name == "listKind") {
			continue // defaulted by the API server
		}
		if msgs := validation.IsDNS1035Label(n.value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(sp.Child("names", n.name), n.value, strings.Join(msgs, "; ")))
		}
	}
	for i, v := range crd.Spec.Versions {
		if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(sp.Child("versions").Index(i).Child("name"), v.Name, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("CRD %q has names the API server refuses, so nothing is printed for it: %w", crd.Name, errs.ToAggregate())
	}
	return nil
}

func getCRD(kubeconfig, name string, timeout time.Duration) (*apiextensionsv1.CustomResourceDefinition, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return nil, fmt.Errorf("get CRD %s: %w", name, err)
	}
	return crd, nil
}

// renderProfile prints the ScaleProfile and ClusterRole of one inference,
// with the webhook rules scaleplane will hold for the kind as comments.
func renderProfile(crd *apiextensionsv1.CustomResourceDefinition, in *profile.Inference) (string, error) {
	v, err := profile.Compile(in.Spec)
	if err != nil {
		return "", err
	}
	gvr := v.GVR()
	name := gvr.Resource + "." + gvr.Group
	sp := &v1alpha1.ScaleProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScaleProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       in.Spec,
	}
	spYAML, err := compactYAML(sp)
	if err != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "scaleplane:" + name,
			Labels: map[string]string{AggregateToScaleplaneLabel: "true"},
		},
		Rules: kindRules(gvr.Group, gvr.Resource),
	}
	roleYAML, err := compactYAML(role)
	if err != nil {
		return "", err
	}
	mutating, validating := webhooks.Configurations([]*profile.Compiled{v}, webhooks.ConfigurationOptions{}, webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	var b strings.Builder
	fmt.Fprintf(&b, "# ScaleProfile and RBAC for %s (CRD %s), made by scaleplane profile init.\n", commentText(crd.Spec.Names.Kind), commentText(crd.Name))
	fmt.Fprintf(&b, "# Apply with: kubectl apply --server-side -f FILE\n")
	fmt.Fprintf(&b, "# scaleplane keeps these rules in its webhook configurations for the kind:\n")
	for _, w := range mutating.Webhooks {
		writeRules(&b, "mutating", w.Rules)
	}
	for _, w := range validating.Webhooks {
		writeRules(&b, "validating", w.Rules)
	}
	b.WriteString(spYAML)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# What scaleplane needs on %s; the label adds it to scaleplane's aggregated role.\n", commentText(name))
	b.WriteString(roleYAML)
	return b.String(), nil
}

// writeRules prints rules without the webhook entries' names, which
// depend on the owner scaleplane runs as.
func writeRules(b *strings.Builder, side string, rules []admissionregistrationv1.RuleWithOperations) {
	for _, r := range rules {
		ops := make([]string, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = string(o)
		}
		fmt.Fprintf(b, "#   %s: %s %s/%s %s\n", side, strings.Join(ops, ","), commentText(strings.Join(r.APIGroups, ",")), commentText(strings.Join(r.APIVersions, ",")), commentText(strings.Join(r.Resources, ",")))
	}
}

// commentText is s as it may stand in a YAML comment: quoted when it holds
// anything but printable characters, so that no line break ends the
// comment. Names are checked before (checkCRDNames); this keeps a comment a
// comment whatever a later caller passes.
func commentText(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// kindRules are what scaleplane needs on one profiled kind (as
// config/rbac/profiled_kinds_role.yaml lists them).
func kindRules(group, resource string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{group}, Resources: []string{resource + "/status"}, Verbs: []string{"get", "patch", "update"}},
		{APIGroups: []string{group}, Resources: []string{resource + "/scale"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{group}, Resources: []string{resource + "/finalizers"}, Verbs: []string{"update"}},
	}
}

// compactYAML is v as YAML without empty objects and null or zero
// metadata fields (creationTimestamp: null, status: {}).
func compactYAML(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	prune(m)
	out, err := yaml.Marshal(m)
	return string(out), err
}

func prune(m map[string]any) bool {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if prune(x) {
				delete(m, k)
			}
		}
	}
	return len(m) == 0
}

// renderHandle prints, for a kind without /scale, the ScaleHandle kind's
// ScaleProfile, the ClusterRole the handle needs on the kind, and a
// ScaleHandle for the workload name, with comments saying why.
func renderHandle(crd *apiextensionsv1.CustomResourceDefinition, in *profile.HandleInference, name string) (string, error) {
	if name == "" {
		name = strings.ToLower(crd.Spec.Names.Kind)
	}
	hv, err := profile.Compile(profile.ScaleHandleProfile())
	if err != nil {
		return "", err
	}
	hgvr := hv.GVR()
	sp := &v1alpha1.ScaleProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScaleProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: hgvr.Resource + "." + hgvr.Group},
		Spec:       profile.ScaleHandleProfile(),
	}
	spYAML, err := compactYAML(sp)
	if err != nil {
		return "", err
	}
	resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
	role := &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "scaleplane:" + resource,
			Labels: map[string]string{AggregateToScaleplaneLabel: "true"},
		},
		// Read and watch the targets, and the fan-out's merge patch;
		// nothing of their status, /scale or finalizers.
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{crd.Spec.Group}, Resources: []string{crd.Spec.Names.Plural}, Verbs: []string{"get", "list", "watch", "update", "patch"}}},
	}
	roleYAML, err := compactYAML(role)
	if err != nil {
		return "", err
	}
	spec := in.Spec
	spec.TargetRef.Name = name
	h := &v1alpha1.ScaleHandle{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.ScaleHandleKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}
	hYAML, err := compactYAML(h)
	if err != nil {
		return "", err
	}
	mutating, validating := webhooks.Configurations([]*profile.Compiled{hv}, webhooks.ConfigurationOptions{}, webhooks.ServiceClientConfig("scaleplane-system", "scaleplane-webhook-service", 443))
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (CRD %s) has no /scale subresource and no replicas\n", crd.Spec.Names.Kind, crd.Name)
	fmt.Fprintf(&b, "# field, so kubectl scale, an HPA and KEDA cannot scale it. scaleplane profile init made a\n")
	fmt.Fprintf(&b, "# ScaleHandle for it: an object of scaleplane's own with /scale, whose replicas scaleplane fans\n")
	fmt.Fprintf(&b, "# out to every member group of the %s (%s), with neither the CRD nor its operator changed.\n", crd.Spec.Names.Kind, in.Spec.MemberGroups.Path)
	fmt.Fprintf(&b, "# Apply with: kubectl apply --server-side -f FILE\n")
	fmt.Fprintf(&b, "#\n# The ScaleHandle kind's profile, once per cluster. scaleplane keeps these webhook rules for it:\n")
	for _, w := range mutating.Webhooks {
		writeRules(&b, "mutating", w.Rules)
	}
	for _, w := range validating.Webhooks {
		writeRules(&b, "validating", w.Rules)
	}
	b.WriteString(spYAML)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# What a ScaleHandle needs on %s; the label adds it to scaleplane's aggregated role.\n", resource)
	b.WriteString(roleYAML)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "# One handle per %s, in its namespace. Scale it with kubectl scale scalehandle/%s, or name\n", crd.Spec.Names.Kind, name)
	fmt.Fprintf(&b, "# it in an HPA's or a KEDA ScaledObject's scaleTargetRef (kind ScaleHandle, apiVersion %s).\n", v1alpha1.GroupVersion)
	fmt.Fprintf(&b, "# Add spec.pods (labels, memberGroupLabel) for a /scale selector of one group's pods.\n")
	b.WriteString(hYAML)
	return b.String(), nil
}
