package sidebyside

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// Environment variables: enableVar=1 runs the heavy tests; nVar sets how
// many workloads the side-by-side arms drive and scaleNVar how many the
// scale test creates; outVar is the file the table is written to.
const (
	enableVar = "SCALEPLANE_SIDE_BY_SIDE"
	nVar      = "SCALEPLANE_SIDE_BY_SIDE_N"
	scaleNVar = "SCALEPLANE_SCALE_N"
	// noKEDAVar, when set, runs the side-by-side test's scaleplane arms
	// alone (A and B), leaving out arm C, KEDA with the HPA controller.
	noKEDAVar = "SCALEPLANE_SIDE_BY_SIDE_NO_KEDA"
	outVar    = "SCALEPLANE_SIDE_BY_SIDE_OUT"
	// cpuProfileVar, when set, is a file prefix: scaleplane's CPU profile
	// over the first 30 s of each of its arms' rest window goes to
	// <prefix>-A.pprof and <prefix>-B.pprof.
	cpuProfileVar = "SCALEPLANE_SIDE_BY_SIDE_CPU_PROFILE"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(childVar) != "" {
		os.Exit(runChild())
	}
	if !enabled() {
		// The measuring helpers' unit tests only: no control plane.
		os.Exit(m.Run())
	}
	log := logr.Discard()
	if os.Getenv("SCALEPLANE_E2E_VERBOSE") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(log)
	var err error
	if settings, err = ParseSettings(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The HPA controller syncs at the run's polling interval, with the
	// run's client-side limits.
	os.Exit(framework.Run(m, framework.Options{HPAController: true, Aggregator: true, ControllerManagerFlags: settings.ControllerManagerFlags()}, &cluster))
}

// settings are the side-by-side run's, from the environment.
var settings Settings

func enabled() bool { return os.Getenv(enableVar) == "1" }

// needCluster skips a heavy test unless enableVar asks for it.
func needCluster(t *testing.T) {
	t.Helper()
	if !enabled() {
		t.Skipf("heavy benchmark: set %s=1 to run it (make bench-keda)", enableVar)
	}
}

// envInt is a positive integer from the environment, or def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return n
}
