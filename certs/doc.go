// Package certs owns the TLS material of scaleplane's admission webhooks.
//
// It supports two modes, chosen with --cert-mode:
//
//   - cert-manager (ModeCertManager): cert-manager issues the serving
//     certificate into a Secret and its CA injector fills caBundle. This package
//     builds the cert-manager objects with cert-manager's own Go types
//     (SelfSignedIssuer, CACertificate, CAIssuer, ServingCertificate), creates
//     the missing ones (EnsureCertManager), and reports clearly when
//     cert-manager's CRDs are not installed or an existing Certificate
//     lacks the address the API server calls the webhook on.
//   - self-signed (ModeSelfSigned): a Rotator generates a CA and a serving
//     certificate into a Secret, renews them before they expire, and injects
//     the CA bundle into scaleplane's own webhook configurations. Any number of
//     replicas may run it at once without leader election: writes are
//     create-if-absent and update-at-resourceVersion, so exactly one writer
//     wins each change and every replica converges on the same Secret.
//
// In both modes the Rotator can mirror the Secret into a directory with the
// same atomic symlink swap the kubelet uses for Secret volumes, so that
// controller-runtime's certwatcher (webhook.Options CertDir/CertName/KeyName)
// reloads a renewed pair without a restart, and it offers a readiness check
// that fails until the certificate is in place.
//
// The package must not register or serve webhooks, must not touch any field
// of a webhook configuration other than caBundle and its own annotation, and
// must not edit cert-manager objects it did not create.
package certs
