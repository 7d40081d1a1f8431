package framework

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Run starts one control plane for a test package, runs its tests, stops
// the control plane and returns the exit code for os.Exit. Use it from
// TestMain:
//
//	var cluster *framework.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(framework.Run(m, framework.Options{}, &cluster)) }
func Run(m *testing.M, opts Options, into **Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: control plane started in %s\n", time.Since(start).Round(time.Millisecond))
	*into = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
