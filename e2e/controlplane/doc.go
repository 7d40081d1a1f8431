// Package controlplane starts a real Kubernetes control plane on loopback:
// etcd and kube-apiserver through controller-runtime's envtest, optionally
// kube-controller-manager running only the HPA controller, and the real
// kubectl. The programs are built from Go modules by `make tools` (see
// hack/tools) or taken from KUBEBUILDER_ASSETS.
//
// The e2e test framework and `scaleplane dev` both use it, so the demo runs
// exactly what the tests prove. It must not import package testing (the
// binary links it) nor contain scaleplane logic.
package controlplane
