package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/cmd/scaleplane/app"
	"github.com/scaleplane/scaleplane/profile"
)

func renderMain(args []string) int {
	return render(args, os.Stdout, os.Stderr)
}

const renderUsage = `Usage:
  scaleplane render webhooks --config FILE [-f SCALEPROFILES]... [flags]
  scaleplane render certificates [--config FILE] [flags]
  scaleplane render policies --config FILE

Prints, for a GitOps repository, what scaleplane writes itself outside
GitOps mode (--gitops): the two webhook configurations, with an entry per
profiled kind (the configuration file's and those of the ScaleProfiles
given with -f), or the cert-manager Issuers and Certificate of
--cert-mode=cert-manager. Give the same flags the Deployment runs with.
Commit the output and run scaleplane with --gitops: it then writes neither,
so Argo CD and Flux see no drift. caBundle is left out: cert-manager's CA
injector fills it (in files mode, add your own).
`

// render prints the objects of `scaleplane render webhooks|certificates`.
// Exit 0 on success, 1 when the profiles are invalid, 2 for bad usage or
// unreadable files.
func render(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "policies" {
		return renderPolicies(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "webhooks" && args[0] != "certificates") {
		fmt.Fprint(stderr, renderUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return 0
		}
		return 2
	}
	what := args[0]
	fs := flag.NewFlagSet("scaleplane render "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configPath = fs.String("config", "", "the component configuration file the Deployment runs with")
		files      repeated
		opts       app.Options
		certMode   string
	)
	fs.Var(&files, "f", "a file of ScaleProfiles whose kinds the webhook configurations route too; repeatable (webhooks only)")
	fs.StringVar(&opts.Namespace, "namespace", "scaleplane-system", "namespace scaleplane runs in (its Service, Secret and cert-manager objects)")
	fs.StringVar(&opts.ServiceName, "webhook-service", "scaleplane-webhook-service", "Service in front of the webhook server")
	fs.StringVar(&opts.SecretName, "webhook-secret", "scaleplane-webhook-server-cert", "Secret the serving Certificate writes")
	fs.StringVar(&certMode, "cert-mode", string(app.CertCertManager), "who issues the webhook certificate: cert-manager or files (GitOps mode does not run self-signed)")
	bindWebhookURL(fs, &opts)
	bindIssuer(fs, &opts)
	fs.Usage = func() {
		fmt.Fprint(stderr, renderUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scaleplane render %s: unexpected argument %q\n", what, fs.Arg(0))
		return 2
	}
	if err := checkObjectNames(&opts); err != nil {
		fmt.Fprintf(stderr, "scaleplane render %s: %v\n", what, err)
		return 2
	}
	opts.CertMode = app.CertMode(certMode)
	if opts.CertMode != app.CertCertManager && opts.CertMode != app.CertFiles {
		fmt.Fprintf(stderr, "scaleplane render %s: --cert-mode=%s: GitOps mode runs with %s or %s\n", what, certMode, app.CertCertManager, app.CertFiles)
		return 2
	}
	cfg := &configv1alpha2.Configuration{}
	cfg.APIVersion, cfg.Kind = configv1alpha2.APIVersion, configv1alpha2.Kind
	cfg.Default()
	if *configPath != "" {
		c, warnings, err := app.LoadConfiguration(*configPath)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "scaleplane render %s: warning: %s\n", what, w)
		}
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane render %s: %v\n", what, err)
			return 2
		}
		cfg = c
	} else if what == "webhooks" {
		fmt.Fprintln(stderr, "scaleplane render webhooks: --config is required: the configuration file names the profiled kinds, the owner and the webhook settings")
		return 2
	}
	opts.Config = cfg

	var objs []client.Object
	switch what {
	case "certificates":
		if len(files) > 0 {
			fmt.Fprintln(stderr, "scaleplane render certificates: -f is for webhooks (ScaleProfiles have no certificates)")
			return 2
		}
		var err error
		if objs, err = app.RenderCertificates(opts); err != nil {
			fmt.Fprintf(stderr, "scaleplane render certificates: %v\n", err)
			return 2
		}
	case "webhooks":
		views, code := renderViews(cfg, files, stderr)
		if code != 0 {
			return code
		}
		objs = app.RenderWebhookConfigurations(opts, views)
	}
	fmt.Fprintf(stdout, "# Made by scaleplane render %s for a scaleplane started with --gitops; apply with kubectl apply --server-side -f FILE.\n", what)
	for i, obj := range objs {
		out, err := manifest(obj)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane render %s: %v\n", what, err)
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		fmt.Fprint(stdout, out)
	}
	return 0
}

// renderViews compiles the configuration's profiles and those of the
// ScaleProfile files, refusing (exit 1, with field paths) what the API
// server or scaleplane would refuse: an invalid profile, or two for one
// kind. Kinds are keyed by group and kind, as the ScaleProfile reconciler
// keys them: of two profiles of a kind at two versions it runs one (the
// other is a Conflict), and an entry rendered for the other would call a
// dispatcher path with no active profile, refusing every write of the kind.
func renderViews(cfg *configv1alpha2.Configuration, files []string, stderr io.Writer) ([]*profile.Compiled, int) {
	views, err := profile.CompileAll(cfg.Profiles)
	if err != nil {
		fmt.Fprintf(stderr, "scaleplane render webhooks: %v\n", err)
		return nil, 1
	}
	seen := map[schema.GroupKind]string{}
	for _, v := range views {
		seen[v.GVK().GroupKind()] = "the configuration"
	}
	problems := 0
	for _, f := range files {
		sources, errs, err := readProfiles(f, stderr, nil)
		if err != nil {
			fmt.Fprintf(stderr, "scaleplane render webhooks: %v\n", err)
			return nil, 2
		}
		for _, e := range errs {
			problems++
			fmt.Fprintf(stderr, "error: %s: %v\n", f, e)
		}
		for _, s := range sources {
			if errs := profile.Validate(&s.spec, s.fp); len(errs) > 0 {
				for _, e := range errs {
					problems++
					fmt.Fprintf(stderr, "error: %s: %s\n", f, e.Error())
				}
				continue
			}
			v, err := profile.Compile(s.spec)
			if err != nil {
				problems++
				fmt.Fprintf(stderr, "error: %s: %s: %v\n", f, s.what, err)
				continue
			}
			if first, dup := seen[v.GVK().GroupKind()]; dup {
				problems++
				fmt.Fprintf(stderr, "error: %s: %s: %s (also profiled by %s); keep one\n", f, s.what, field.Duplicate(s.fp.Child("target"), v.GVK().GroupKind().String()).Error(), first)
				continue
			}
			seen[v.GVK().GroupKind()] = s.file + " " + s.what
			views = append(views, v)
		}
	}
	if problems > 0 {
		fmt.Fprintf(stderr, "scaleplane render webhooks: %d problem(s); nothing printed\n", problems)
		return nil, 1
	}
	return views, 0
}

// manifest is obj as YAML without what the API server sets (a null
// creationTimestamp, an empty status). Empty objects that mean something
// (selfSigned: {}, namespaceSelector: {}) stay.
func manifest(obj client.Object) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	out, err := yaml.Marshal(m)
	return strings.TrimPrefix(string(out), "\n"), err
}
