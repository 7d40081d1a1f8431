package main

import (
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

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
	fs.Var(&crdFiles, "crd", "a file of CRDs (YAML or JSON, several documents allowed), or a folder of such files, to check the profiles against; repeatable")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: scaleplane config check -f FILE [-f FILE]... [--crd FILE]...

Checks component configurations and ScaleProfiles offline: the profile rules,
and, against the CRDs given, that every path exists in the served schema with
the right type, that the /scale paths agree, that member groups have their
fields and that a scale config path is an object. Prints every problem with
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
		s, errs, err := readProfiles(f, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane config check: %v\n", err)
			return 2
		}
		report(f, errs)
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

// readProfiles reads the profiles of a component configuration, or of a
// file of ScaleProfiles (several documents allowed). errs are problems of
// the file itself (a configuration that does not validate); err means it
// cannot be read at all.
func readProfiles(name string, stderr io.Writer) ([]profileSource, field.ErrorList, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, fmt.Errorf("read %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []profileSource
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil, nil
			}
			return nil, nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return nil, nil, fmt.Errorf("read %s, document %d: %w", name, i, err)
		}
		switch tm.Kind {
		case "Configuration":
			// The same decoding the binary does, old versions converted.
			c, warnings, err := configv1alpha2.Decode(data)
			if err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", name, err)
			}
			for _, w := range warnings {
				fmt.Fprintf(stderr, "scaleplane: %s: warning: %s\n", name, w)
			}
			c.Default()
			errs := c.Validate()
			for j, p := range c.Profiles {
				out = append(out, profileSource{file: name, fp: field.NewPath("profiles").Index(j), what: fmt.Sprintf("profiles[%d] (%s)", j, p.Target.Kind), spec: p})
			}
			return out, errs, nil
		case "ScaleProfile":
			var sp v1alpha1.ScaleProfile
			d := json.NewDecoder(bytes.NewReader(raw))
			d.DisallowUnknownFields()
			if err := d.Decode(&sp); err != nil {
				return nil, nil, fmt.Errorf("read %s, document %d (ScaleProfile): %w", name, i, err)
			}
			out = append(out, profileSource{file: name, fp: field.NewPath("spec"), what: "ScaleProfile " + sp.Name, spec: sp.Spec})
		default:
			// kubectl-style files mix kinds (profile init prints a
			// ClusterRole too): only profiles are checked.
		}
	}
}
