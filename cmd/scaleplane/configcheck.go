package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
)

func configMain(args []string) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(os.Stderr, "Usage: scaleplane config check -f FILE [-f FILE]... [--crd FILE]...")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	return configCheck(args[1:], os.Stdout, os.Stderr)
}

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// profileSource is one profile to check and where it came from.
type profileSource struct {
	file string
	// fp is the spec's field path in its file: profiles[2] in a
	// configuration, spec in a ScaleProfile.
	fp   *field.Path
	what string
	spec v1alpha1.ScaleProfileSpec
}

// configCheck validates component configurations and ScaleProfile files
// offline, against CRD files: every problem at once, each with its field
// path. Exit 0 when there is none (warnings allowed), 1 when there are, 2
// for bad usage or unreadable files.
func configCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scaleplane config check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files, crdFiles repeated
	fs.Var(&files, "f", "a component configuration file, or a file of ScaleProfiles; repeatable")
	metricsAddr := fs.String("metrics-bind-address", ":8443", "the metrics server's address the binary runs with (its flag of the same name), checked against the configuration's addresses")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "the health probe server's address the binary runs with, checked likewise")
	fs.Var(&crdFiles, "crd", "a file of CRDs (YAML or JSON, several documents allowed), or a folder of such files, to check the profiles against; repeatable")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: scaleplane config check -f FILE [-f FILE]... [--crd FILE]...

Checks component configurations and ScaleProfiles offline: the profile rules,
and, against the CRDs given, that every path exists in the served schema with
the right type, that the /scale paths agree, that member groups have their
fields and that a scale config path is an object; and that every server's
listen address can be bound, none taken twice (the configuration's and the
metrics and probe flags'). Prints every problem with
its field path, and what the schema's limits mean for scaling (M7, S2).
Exit 0: no problems; 1: problems; 2: bad usage or unreadable files.

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
	if len(files) == 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "scaleplane config check: give at least one -f FILE (a configuration or ScaleProfiles), and CRD files with --crd")
		return 2
	}
	crds := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range crdFiles {
		list, err := readCRDFile(f, nil)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane config check: %v\n", err)
			return 2
		}
		if len(list) == 0 {
			fmt.Fprintf(stderr, "scaleplane config check: %s holds no CustomResourceDefinition\n", f)
			return 2
		}
		for _, c := range list {
			crds[schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}] = c
		}
	}
	problems := 0
	report := func(file string, errs field.ErrorList) {
		for _, e := range errs {
			problems++
			fmt.Fprintf(stdout, "error: %s: %s\n", file, e.Error())
		}
	}
	var sources []profileSource
	for _, f := range files {
		s, errs, err := readProfiles(f, stderr, configv1alpha2.FlagListeners(*metricsAddr, *probeAddr))
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane config check: %v\n", err)
			return 2
		}
		for _, e := range errs {
			problems++
			fmt.Fprintf(stdout, "error: %s: %v\n", f, e)
		}
		sources = append(sources, s...)
	}
	for _, s := range sources {
		// The profile rules, then the schema: both, so every problem shows
		// at once; a problem both see is reported once.
		verrs := profile.Validate(&s.spec, s.fp)
		report(s.file, verrs)
		seen := map[string]bool{}
		for _, e := range verrs {
			seen[e.Field] = true
		}
		gv, err := schema.ParseGroupVersion(s.spec.Target.APIVersion)
		if err != nil {
			continue
		}
		if profile.BuiltIn(gv.Group) {
			// Kubernetes serves it without a CRD; its profile rules
			// (annotation config, no webhook) are profile.Validate's.
			if len(verrs) == 0 {
				fmt.Fprintf(stdout, "note: %s: %s: a built-in kind: no admission webhook is registered on it; the autoscaler checks its annotation config\n", s.file, s.what)
			}
			continue
		}
		crd, ok := crds[schema.GroupKind{Group: gv.Group, Kind: s.spec.Target.Kind}]
		if !ok {
			if len(crdFiles) > 0 {
				report(s.file, field.ErrorList{field.NotFound(s.fp.Child("target"), s.spec.Target.APIVersion+" "+s.spec.Target.Kind)})
			} else {
				fmt.Fprintf(stdout, "note: %s: %s: no --crd given; paths not checked against a schema\n", s.file, s.what)
			}
			continue
		}
		lim, errs := profile.CheckCRD(s.spec, crd, s.fp)
		errs = slices.DeleteFunc(errs, func(e *field.Error) bool { return seen[e.Field] })
		report(s.file, errs)
		if len(errs)+len(verrs) == 0 {
			spec := *s.spec.DeepCopy()
			profile.Default(&spec)
			for _, n := range profile.SchemaNotes(lim, spec) {
				fmt.Fprintf(stdout, "warning: %s: %s: %s\n", s.file, s.what, n)
			}
		}
	}
	if problems > 0 {
		fmt.Fprintf(stderr, "scaleplane config check: %d problem(s) in %d profile(s)\n", problems, len(sources))
		return 1
	}
	fmt.Fprintf(stderr, "scaleplane config check: %d profile(s) OK\n", len(sources))
	return 0
}

// readProfiles reads the profiles of the component configurations and
// ScaleProfiles in a file (several documents allowed, other kinds skipped:
// kubectl-style files mix them, and profile init prints a ClusterRole too).
// Every document is decoded as the binary and the API server's strict field
// validation read it: field names case-sensitive, unknown and repeated
// fields refused. problems are what makes the file wrong (a document that
// is not an object or has no kind, a misspelt kind or field, a
// configuration that does not validate, a file with no profile kind at
// all), each naming its document; err means it cannot be read at all.
// flags are the listen addresses the binary's flags give, checked against
// a configuration's own.
func readProfiles(name string, stderr io.Writer, flags []configv1alpha2.Listener) (out []profileSource, problems []error, err error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, fmt.Errorf("read %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	docs, profileDocs := 0, 0
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			problems = append(problems, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue // comments only, or an empty document between ---
		}
		docs++
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			problems = append(problems, fmt.Errorf("document %d is not an object (%s); give Configurations and ScaleProfiles as YAML or JSON objects", i, strings.TrimPrefix(err.Error(), "json: ")))
			continue
		}
		// The keys as written: encoding/json would read KIND as kind.
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		switch {
		case kind == configv1alpha2.Kind:
			profileDocs++
			c, warnings, err := configv1alpha2.Decode(js)
			if err != nil {
				problems = append(problems, fmt.Errorf("document %d (Configuration): %w", i, err))
				continue
			}
			for _, w := range warnings {
				fmt.Fprintf(stderr, "scaleplane: %s: warning: %s\n", name, w)
			}
			c.Default()
			for _, e := range append(c.Validate(), c.ValidateListeners(flags)...) {
				problems = append(problems, e)
			}
			for j, p := range c.Profiles {
				out = append(out, profileSource{file: name, fp: field.NewPath("profiles").Index(j), what: fmt.Sprintf("profiles[%d] (%s)", j, p.Target.Kind), spec: p})
			}
		case kind == "ScaleProfile":
			profileDocs++
			sp, err := decodeScaleProfile(js, apiVersion)
			if err != nil {
				problems = append(problems, fmt.Errorf("document %d (ScaleProfile): %w", i, err))
				continue
			}
			out = append(out, profileSource{file: name, fp: field.NewPath("spec"), what: "ScaleProfile " + sp.Name, spec: sp.Spec})
		case kind == v1alpha1.ScaleHandleKind && apiVersion == v1alpha1.GroupVersion.String():
			// profile init prints a handle beside the ScaleHandle kind's
			// profile for a CRD without /scale: read as strictly, not a
			// profile itself.
			strict, err := kjson.UnmarshalStrict(js, &v1alpha1.ScaleHandle{})
			if err == nil && len(strict) > 0 {
				err = errors.Join(strict...)
			}
			if err != nil {
				problems = append(problems, fmt.Errorf("document %d (ScaleHandle): %w", i, err))
			}
		case kind == "":
			problems = append(problems, fmt.Errorf("document %d has no kind (field names are case-sensitive: kind, apiVersion); give kind: ScaleProfile or kind: Configuration", i))
		case strings.EqualFold(kind, "ScaleProfile") || strings.EqualFold(kind, configv1alpha2.Kind) ||
			strings.HasPrefix(apiVersion, v1alpha1.GroupVersion.Group+"/") || strings.HasPrefix(apiVersion, configv1alpha2.GroupName+"/"):
			problems = append(problems, fmt.Errorf("document %d: kind %q of %s is not a kind scaleplane reads; write ScaleProfile (scaleplane.io) or Configuration (config.scaleplane.io), case as shown", i, kind, apiVersion))
		default:
			// Another kind (a ClusterRole, a CRD): not a profile.
		}
	}
	if profileDocs == 0 && len(problems) == 0 {
		problems = append(problems, fmt.Errorf("holds no Configuration or ScaleProfile (%d other document(s)); nothing would be checked", docs))
	}
	return out, problems, nil
}

// decodeScaleProfile decodes one ScaleProfile document as the API server's
// strict field validation does: case-sensitive, every unknown or repeated
// field refused with its path.
func decodeScaleProfile(js []byte, apiVersion string) (*v1alpha1.ScaleProfile, error) {
	if apiVersion != v1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("apiVersion %q: must be %q", apiVersion, v1alpha1.GroupVersion.String())
	}
	sp := &v1alpha1.ScaleProfile{}
	strict, err := kjson.UnmarshalStrict(js, sp)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		errs := make([]error, len(strict))
		for i, e := range strict {
			errs[i] = fmt.Errorf("%w; remove it or fix its spelling (field names are case-sensitive)", e)
		}
		return nil, errors.Join(errs...)
	}
	return sp, nil
}
