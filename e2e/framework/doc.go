// Package framework is the test layer over package controlplane: one
// control plane per test package (Run), a namespace per test
// (Cluster.Namespace), and waiting on conditions with deadlines
// (Eventually). e2e tests import this package; the names below re-export
// controlplane's so tests need one import.
//
// It must not contain scaleplane logic: tests wire the real packages through
// Cluster.NewManager or the binary's own app package.
package framework
