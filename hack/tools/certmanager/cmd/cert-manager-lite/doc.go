// Command cert-manager-lite runs the real cert-manager controllers needed to
// issue self-signed and CA certificates, plus the real CA injector for webhook
// configurations, in one process against a kubeconfig.
//
// It exists because cert-manager's images and its cmd modules are not
// available to scaleplane's test machines, while its controller packages are:
// they register themselves by package init, so importing them and calling
// their constructors from controller.Known() gives the same control loops the
// official binary runs. Leader election is always off: the process is meant to
// be the only instance, started and stopped by a test.
//
// Usage:
//
//	cert-manager-lite --kubeconfig=PATH [--ready-file=PATH] [--v=2]
package main
