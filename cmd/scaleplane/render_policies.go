package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/policies"
	"github.com/scaleplane/scaleplane/profile"
)

const renderPoliciesUsage = `Usage:
  scaleplane render policies --config FILE

Prints, for each profile of the configuration file, the API server's own
admission policies (admissionregistration.k8s.io/v1): a
MutatingAdmissionPolicy doing M1–M5 and a ValidatingAdmissionPolicy
enforcing V1, V2, V4 and V8, each with its binding. They keep defaulting and
validating the kind while scaleplane is down; what CEL cannot decide
(metrics, triggers, a config in an annotation) stays with the
webhook (docs/design.md, "Admission policies").
`

// renderPolicies prints the policies of `scaleplane render policies`.
// Exit 0 on success, 1 when the profiles are invalid, 2 for bad usage or
// an unreadable file.
func renderPolicies(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scaleplane render policies", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the component configuration file whose profiles to compile")
	fs.Usage = func() {
		fmt.Fprint(stderr, renderPoliciesUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scaleplane render policies: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "scaleplane render policies: --config is required: the configuration file names the profiled kinds")
		return 2
	}
	cfg, warnings, err := app.LoadConfiguration(*configPath)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "scaleplane render policies: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane render policies: %v\n", err)
		return 2
	}
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane render policies: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "# Made by scaleplane render policies; apply with kubectl apply --server-side -f FILE.")
	for i, v := range views {
		set := policies.For(v)
		for j, obj := range set.Objects() {
			out, err := manifest(obj)
			if err != nil {
				fmt.Fprintf(stderr, "scaleplane render policies: %v\n", err)
				return 1
			}
			if i > 0 || j > 0 {
				fmt.Fprintln(stdout, "---")
			}
			if j == 0 {
				fmt.Fprintf(stdout, "# %s: %v\n", v.GVK().GroupKind(), set.Rules)
			}
			fmt.Fprint(stdout, out)
		}
	}
	return 0
}
