// Command kube-apiserver is the upstream Kubernetes API server, built from
// k8s.io/kubernetes so that tests and `scaleplane dev` run a real control
// plane on machines without Docker or prebuilt binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
