package certmanagertest

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
)

// Renew makes cert-manager reissue a Certificate now, the way `cmctl renew`
// does: by setting its Issuing condition. With the serving Certificate's
// rotationPolicy Always, the reissued certificate has a new key.
func Renew(ctx context.Context, c client.Client, namespace, name string) error {
	crt := &cmapi.Certificate{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, crt); err != nil {
		return fmt.Errorf("get certificate %s/%s: %w", namespace, name, err)
	}
	cond := cmapi.CertificateCondition{
		Type:               cmapi.CertificateConditionIssuing,
		Status:             cmmeta.ConditionTrue,
		Reason:             "ManuallyTriggered",
		Message:            "Certificate re-issuance manually triggered",
		LastTransitionTime: &metav1.Time{Time: time.Now()},
		ObservedGeneration: crt.Generation,
	}
	replaced := false
	for i := range crt.Status.Conditions {
		if crt.Status.Conditions[i].Type == cond.Type {
			crt.Status.Conditions[i] = cond
			replaced = true
		}
	}
	if !replaced {
		crt.Status.Conditions = append(crt.Status.Conditions, cond)
	}
	if err := c.Status().Update(ctx, crt); err != nil {
		return fmt.Errorf("trigger renewal of certificate %s/%s: %w", namespace, name, err)
	}
	return nil
}

// WaitReady waits until the Certificate is Ready for its current generation
// and its status.revision (one per issuance) is at least minRevision, so
// that Renew can be awaited with the revision before it plus one.
func WaitReady(ctx context.Context, c client.Client, namespace, name string, minRevision int, timeout time.Duration) (*cmapi.Certificate, error) {
	crt := &cmapi.Certificate{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, crt); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if crt.Status.Revision == nil || *crt.Status.Revision < minRevision {
			return false, nil
		}
		for _, cond := range crt.Status.Conditions {
			if cond.Type == cmapi.CertificateConditionReady {
				return cond.Status == cmmeta.ConditionTrue && cond.ObservedGeneration == crt.Generation, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("certificate %s/%s not ready within %s (conditions %+v): %w", namespace, name, timeout, crt.Status.Conditions, err)
	}
	return crt, nil
}
