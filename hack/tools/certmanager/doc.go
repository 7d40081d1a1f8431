// Package certmanager is a build-only module: it compiles the real cert-manager
// controllers and CA injector from the cert-manager Go module into one small
// binary (cmd/cert-manager-lite) that scaleplane's tests run against an envtest
// control plane, because cert-manager's images and cmd modules are not
// available here.
//
// It is a separate module so that cert-manager's large dependency graph (ACME,
// Vault, Venafi, cloud DNS SDKs) never enters scaleplane's own go.mod. It must
// not be imported by the product.
package certmanager
