// Package certmanagertest runs the real cert-manager (controllers and CA
// injector, built from the cert-manager Go module by
// hack/tools/certmanager into bin/controlplane/cert-manager) against a test
// API server, and installs cert-manager's CRDs from the module's deploy/crds.
//
// It is test support: it starts and stops a child process and must not be
// imported by the product. It never builds the binary; `make tools` does,
// and Binary/SkipUnlessAvailable say where it is expected.
package certmanagertest
