package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkCreateProfile takes a CPU profile of kube-apiserver (its
// /debug/pprof/profile) while one side of BenchmarkCreateLatency creates
// RackedClusters one after another, side by side, so that a side's extra
// CPU per create can be compared with `none`'s:
//
//	SCALEPLANE_APISERVER_PROFILE=/tmp/prof go -C e2e test -run '^$' -bench CreateProfile ./admission/
//	go tool pprof -top -diff_base /tmp/prof/defaulting-none.pprof /tmp/prof/defaulting-policies.pprof
//
// It writes <shape>-<side>.pprof for every shape and side named in
// SCALEPLANE_APISERVER_PROFILE_SIDES (default "none,policies"), and
// reports the creates each profile covers and the API server's admission
// metrics per create (µs): the mutating and validating steps, and each
// admission plugin. Divide a profile's figures by its creates to compare
// sides. Skipped unless SCALEPLANE_APISERVER_PROFILE names a directory.
func BenchmarkCreateProfile(b *testing.B) {
	dir := os.Getenv("SCALEPLANE_APISERVER_PROFILE")
	if dir == "" {
		b.Skip("SCALEPLANE_APISERVER_PROFILE names no directory for the profiles")
	}
	names := strings.Split(os.Getenv("SCALEPLANE_APISERVER_PROFILE_SIDES"), ",")
	if names[0] == "" {
		names = []string{"none", "policies"}
	}
	seconds := 20
	for _, shape := range []struct {
		name    string
		members []interface{}
	}{
		{"defaulting", []interface{}{"a", 1, "b", 2, "c", 5}},
		{"defaulted", []interface{}{"a", 3, "b", 3, "c", 3}},
	} {
		body := manifest{kind: "RackedCluster", name: "bench", spec: obj{
			"replicas": 3, "scaleConfig": fullConfig(), "racks": racks(shape.members...),
		}}.json()
		b.Run(shape.name, func(b *testing.B) {
			for _, name := range names {
				s := &side{name: name}
				s.setUp(b)
				create := func() {
					u := &unstructured.Unstructured{}
					if err := u.UnmarshalJSON([]byte(body)); err != nil {
						b.Fatal(err)
					}
					s.n++
					u.SetNamespace(s.namespace)
					u.SetName(fmt.Sprintf("bench-%05d", s.n))
					if err := cluster.Client.Create(context.Background(), u); err != nil {
						b.Fatalf("create in %s: %v", s.namespace, err)
					}
				}
				for range 20 {
					create()
				}
				before := admissionMetrics(b)
				done := make(chan []byte)
				go func() {
					cs, err := kubernetes.NewForConfig(cluster.Config)
					if err != nil {
						b.Error(err)
						close(done)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
					defer cancel()
					raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(seconds)).DoRaw(ctx)
					if err != nil {
						b.Errorf("profile the API server: %v", err)
					}
					done <- raw
				}()
				n0 := s.n
				var raw []byte
			loop:
				for {
					select {
					case raw = <-done:
						break loop
					default:
						create()
					}
				}
				creates := float64(s.n - n0)
				after := admissionMetrics(b)
				file := filepath.Join(dir, shape.name+"-"+name+".pprof")
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(creates, name+"-creates")
				keys := make([]string, 0, len(after))
				for k := range after {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					if d := after[k] - before[k]; d > 0 {
						b.Logf("%s %s: %.0f µs/create", name, k, d*1e6/creates)
					}
				}
			}
		})
	}
}

// admissionMetrics are the API server's admission histograms' sums (s),
// by a key of their family and labels: the steps, the plugins and the
// policies.
func admissionMetrics(b *testing.B) map[string]float64 {
	families := apiserverMetrics(b)
	out := map[string]float64{}
	for _, name := range []string{
		"apiserver_admission_step_admission_duration_seconds",
		"apiserver_admission_controller_admission_duration_seconds",
		"apiserver_mutating_admission_policy_check_duration_seconds",
		"apiserver_validating_admission_policy_check_duration_seconds",
		"apiserver_admission_match_condition_evaluation_seconds",
		"apiserver_request_duration_seconds",
	} {
		for _, m := range families[name].GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if name == "apiserver_request_duration_seconds" && (l.GetName() == "verb" && l.GetValue() != "POST" || l.GetName() == "resource" && l.GetValue() != "rackedclusters") {
					labels = nil
					break
				}
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if labels == nil {
				continue
			}
			out[strings.TrimPrefix(name, "apiserver_")+"{"+strings.Join(labels, ",")+"}"] += m.GetHistogram().GetSampleSum()
		}
	}
	return out
}
