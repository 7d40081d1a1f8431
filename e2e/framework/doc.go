// Package framework runs scaleplane's end-to-end tests against a real
// control plane: etcd and kube-apiserver started through controller-runtime's
// envtest, optionally kube-controller-manager running only the HPA
// controller, and the real kubectl. All three are built from Go modules by
// `make tools` (see hack/tools), or taken from KUBEBUILDER_ASSETS.
//
// One control plane serves one test package (see Run); each test works in a
// namespace of its own (see Cluster.Namespace). Everything listens on
// loopback.
//
// It must not contain scaleplane logic: tests wire the real packages through
// StartManager or the binary's own app package.
package framework
