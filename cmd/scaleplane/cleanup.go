package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/certs"
)

const cleanupUsage = `Usage:
  scaleplane cleanup [--namespace NS] [--owner OWNER] [--kind KIND]... [--delete]

Lists what a scaleplane binary created at run time and an uninstall (helm
uninstall, kubectl delete -k) leaves behind, since no manifest holds it:
  - the built-in HPAs it made (label app.kubernetes.io/managed-by=scaleplane
    and scaleplane.io/owner=OWNER), which go on scaling their workloads;
    one without an owner label (made by an older release) is deleted only
    when --kind names its kind;
  - webhook configurations of OWNER that no Helm release manages, whose
    fail-closed entries refuse every write of the profiled kinds while
    nothing serves them;
  - admission policies and bindings of OWNER (admission mode policies),
    which go on mutating and refusing writes of the profiled kinds;
  - in NS, the self-signed Secret and the cert-manager Issuers and
    Certificates it created.
With --delete it deletes them. It never touches your workloads, ScaleProfiles
or Scalings, nor anything it did not create, nor another owner's objects.
docs/production.md has the whole uninstall.
`

// cleanupMain is `scaleplane cleanup`.
func cleanupMain(args []string) int {
	fs := flag.NewFlagSet("scaleplane cleanup", flag.ContinueOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config or in-cluster")
		opts       cleanupOptions
		kinds      repeated
	)
	fs.StringVar(&opts.Namespace, "namespace", "scaleplane-system", "namespace scaleplane ran in (its Secret and cert-manager objects)")
	fs.StringVar(&opts.Owner, "owner", configv1alpha2.DefaultOwner, "the owner (webhook.owner) whose webhook configurations are looked for")
	fs.Var(&kinds, "kind", "only HPAs of workloads of this kind; repeatable (default: every kind)")
	fs.BoolVar(&opts.Delete, "delete", false, "delete what is listed")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, cleanupUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "scaleplane cleanup: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	opts.Kinds = kinds
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane cleanup: %v\n", err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: certs.NewScheme()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane cleanup: %v\n", err)
		return 1
	}
	ctx, stop := signalContext()
	defer stop()
	if err := cleanup(ctx, c, opts, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "scaleplane cleanup: %v\n", err)
		return 1
	}
	return 0
}

type cleanupOptions struct {
	Namespace string
	Owner     string
	Kinds     []string
	Delete    bool
}

// uninstallLeftover is one object an uninstall leaves, and why it is scaleplane's.
type uninstallLeftover struct {
	obj  client.Object
	kind string
	why  string
	// keep, when set, says why --delete leaves the object: cleanup cannot
	// tell that it is this owner's.
	keep string
}

// cleanup lists (and with o.Delete deletes) what scaleplane created at run
// time, writing one line per object to w.
func cleanup(ctx context.Context, c client.Client, o cleanupOptions, w io.Writer) error {
	found, err := uninstallLeftovers(ctx, c, o)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tWHY\tACTION")
	for _, l := range found {
		action := "listed (--delete removes it)"
		switch {
		case l.keep != "":
			action = l.keep
		case o.Delete:
			err := c.Delete(ctx, l.obj)
			switch {
			case err == nil, apierrors.IsNotFound(err):
				action = "deleted"
			default:
				return fmt.Errorf("delete %s %s/%s: %w", l.kind, l.obj.GetNamespace(), l.obj.GetName(), err)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.kind, dash(l.obj.GetNamespace()), l.obj.GetName(), l.why, action)
	}
	if len(found) == 0 {
		fmt.Fprintln(tw, "(nothing left)\t\t\t\t")
	}
	return tw.Flush()
}

func uninstallLeftovers(ctx context.Context, c client.Client, o cleanupOptions) ([]uninstallLeftover, error) {
	var out []uninstallLeftover
	managed := client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}

	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := c.List(ctx, &hpas, managed); err != nil {
		return nil, fmt.Errorf("list HPAs: %w", err)
	}
	for i := range hpas.Items {
		h := &hpas.Items[i]
		kind := h.Labels[v1alpha1.LabelWorkloadKind]
		if len(o.Kinds) > 0 && !slices.Contains(o.Kinds, kind) {
			continue
		}
		l := uninstallLeftover{obj: h, kind: "HorizontalPodAutoscaler", why: fmt.Sprintf("built-in HPA of %s %s", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)}
		switch owner, labelled := h.Labels[v1alpha1.LabelOwner]; {
		case labelled && owner != o.Owner:
			continue // another owner's (an operator embedding scaleplane)
		case !labelled:
			// Made by a release that did not label HPAs with their owner;
			// its controller labels it when it next runs. Only the user can
			// say it is this owner's, by naming its kind.
			l.why += ", no owner label"
			if !slices.Contains(o.Kinds, kind) {
				l.keep = fmt.Sprintf("kept: its owner is unknown; delete it with --kind %s if it is %s's", kind, o.Owner)
			}
		}
		out = append(out, l)
	}

	owned := client.MatchingLabels{v1alpha1.LabelOwner: o.Owner}
	helmManaged := func(obj client.Object) bool { return obj.GetLabels()[v1alpha1.LabelManagedBy] == "Helm" }
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &ms, owned); err != nil {
		return nil, fmt.Errorf("list mutating webhook configurations: %w", err)
	}
	for i := range ms.Items {
		if !helmManaged(&ms.Items[i]) {
			out = append(out, uninstallLeftover{obj: &ms.Items[i], kind: "MutatingWebhookConfiguration", why: fmt.Sprintf("owner %s, %d entries, no Helm release", o.Owner, len(ms.Items[i].Webhooks))})
		}
	}
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &vs, owned); err != nil {
		return nil, fmt.Errorf("list validating webhook configurations: %w", err)
	}
	for i := range vs.Items {
		if !helmManaged(&vs.Items[i]) {
			out = append(out, uninstallLeftover{obj: &vs.Items[i], kind: "ValidatingWebhookConfiguration", why: fmt.Sprintf("owner %s, %d entries, no Helm release", o.Owner, len(vs.Items[i].Webhooks))})
		}
	}

	// Policies mode writes the owner's admission policies and bindings at
	// run time (webhooks.SyncPolicies); an API server without a policy kind
	// has none of it.
	for _, pl := range []struct {
		kind string
		list client.ObjectList
	}{
		{"MutatingAdmissionPolicyBinding", &admissionregistrationv1.MutatingAdmissionPolicyBindingList{}},
		{"ValidatingAdmissionPolicyBinding", &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}},
		{"MutatingAdmissionPolicy", &admissionregistrationv1.MutatingAdmissionPolicyList{}},
		{"ValidatingAdmissionPolicy", &admissionregistrationv1.ValidatingAdmissionPolicyList{}},
	} {
		switch err := c.List(ctx, pl.list, owned); {
		case apimeta.IsNoMatchError(err), apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("list %ss: %w", pl.kind, err)
		}
		items, err := apimeta.ExtractList(pl.list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if obj := item.(client.Object); !helmManaged(obj) {
				out = append(out, uninstallLeftover{obj: obj, kind: pl.kind, why: fmt.Sprintf("owner %s, admission policies mode, no Helm release", o.Owner)})
			}
		}
	}

	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(o.Namespace), managed); err != nil {
		return nil, fmt.Errorf("list Secrets in %s: %w", o.Namespace, err)
	}
	for i := range secrets.Items {
		out = append(out, uninstallLeftover{obj: &secrets.Items[i], kind: "Secret", why: "the self-signed serving key pair"})
	}

	var issuers cmapi.IssuerList
	switch err := c.List(ctx, &issuers, client.InNamespace(o.Namespace), managed); {
	case apimeta.IsNoMatchError(err):
		return out, nil // cert-manager is not installed: nothing of it to find
	case err != nil:
		return nil, fmt.Errorf("list Issuers in %s: %w", o.Namespace, err)
	}
	for i := range issuers.Items {
		out = append(out, uninstallLeftover{obj: &issuers.Items[i], kind: "Issuer", why: "created by scaleplane in cert-manager mode"})
	}
	var crts cmapi.CertificateList
	if err := c.List(ctx, &crts, client.InNamespace(o.Namespace), managed); err != nil {
		return nil, fmt.Errorf("list Certificates in %s: %w", o.Namespace, err)
	}
	for i := range crts.Items {
		out = append(out, uninstallLeftover{obj: &crts.Items[i], kind: "Certificate", why: "created by scaleplane in cert-manager mode"})
	}
	return out, nil
}
