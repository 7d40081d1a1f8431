// Package devworld tests `scaleplane dev`'s sample pods (package
// cmd/scaleplane/devworld) against a real API server: the pods each sample
// kind gets, their loopback servers as the scraper reads them, their
// readiness in the workloads' status, scaling down, deletion and the cap.
package devworld

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	world "github.com/scaleplane/scaleplane/cmd/scaleplane/devworld"
	"github.com/scaleplane/scaleplane/e2e/framework"
	"github.com/scaleplane/scaleplane/profile"
)

var (
	cluster *framework.Cluster
	w       *world.World
	notices noticeLog
)

// maxPods is the per-workload cap the suite runs with, small enough to
// reach.
const maxPods = 6

type noticeLog struct {
	mu  sync.Mutex
	all []world.Notice
}

func (l *noticeLog) add(n world.Notice) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, n)
}

func (l *noticeLog) of(ns, name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, n := range l.all {
		if n.Namespace == ns && n.Name == name {
			out = append(out, n.Message)
		}
	}
	return out
}

func TestMain(m *testing.M) {
	os.Exit(framework.Run(m, framework.Options{CRDPaths: []string{filepath.Join(framework.RepoRoot(), "config", "samples", "crd")}}, &cluster))
}

// startWorld starts the suite's World once; it stops before the control
// plane does.
var startOnce sync.Once

func startWorld(t *testing.T) {
	t.Helper()
	var err error
	startOnce.Do(func() {
		w, err = world.New(world.Options{
			RestConfig:         cluster.Config,
			Kinds:              world.SampleKinds(profile.Samples()),
			MaxPodsPerWorkload: maxPods,
			Notify:             notices.add,
		})
		if err != nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Start(ctx) }()
		framework.BeforeStop(func() {
			cancel()
			if err := <-done; err != nil {
				fmt.Fprintf(os.Stderr, "devworld: %v\n", err)
			}
		})
	})
	if err != nil {
		t.Fatalf("start the world: %v", err)
	}
	if w == nil {
		t.Fatal("the world did not start")
	}
}
