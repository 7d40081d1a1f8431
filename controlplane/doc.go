// Package controlplane starts a real Kubernetes control plane on loopback:
// etcd and kube-apiserver through controller-runtime's envtest, optionally
// kube-controller-manager running only the HPA controller, and the real
// kubectl. The programs are built from Go modules by `make tools` (see
// hack/tools) or taken from KUBEBUILDER_ASSETS.
//
// Every control-plane process it starts dies with the process that started
// it, even one killed with SIGKILL: etcd and kube-apiserver are started
// through a re-exec shim of the calling binary that sets a parent-death
// signal (shim.go), all from one locked OS thread (launcher.go). Process identities (process.go)
// let a later run find what a killed one left without ever signalling a
// reused pid.
//
// The e2e test framework and `scaleplane dev` both use it, so the demo runs
// exactly what the tests prove. It must not import package testing (the
// binary links it) nor contain scaleplane logic.
package controlplane
