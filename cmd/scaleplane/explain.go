package main

import (
	"fmt"
	"os"
)

// explainMain prints the trigger autoscaler's last decisions for a workload.
func explainMain(args []string) int {
	fmt.Fprintln(os.Stderr, "scaleplane explain: not available yet")
	return 1
}
