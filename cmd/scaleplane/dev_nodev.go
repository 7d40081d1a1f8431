//go:build nodev

package main

import (
	"fmt"
	"os"
)

// The release build (the image, `make image`, the Dockerfile) is built with
// -tags nodev: `scaleplane dev` links controller-runtime's envtest, whose
// package initialisation creates a directory under $HOME/.cache or /tmp and
// panics when it cannot, which is every start on the Deployment's
// read-only root file system (the image e2e test found it). A pod has no
// use for an embedded control plane anyway.
func devMain([]string) int {
	fmt.Fprintln(os.Stderr, "scaleplane dev: this build has no dev mode (built with -tags nodev, as the container image is); run it from source: make demo in a scaleplane checkout")
	return 2
}
