package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

type (
	obj  = map[string]any
	list = []any
)

// apiVersions of the kinds inputs are written as.
var apiVersions = map[string]string{
	"RackedCluster": "samples.scaleplane.io/v1alpha1",
	"WorkerGroup":   "samples.scaleplane.io/v1alpha1",
	"Function":      "samples.scaleplane.io/v1alpha1",
	"ZonedDatabase": "data.example.org/v1beta1",
	"LooseCluster":  looseGVK.GroupVersion().String(),
}

// kubectlInput is one object applied with kubectl.
type kubectlInput struct {
	name string
	kind string
	// spec is the object's spec; annotations its annotations.
	spec        any
	annotations map[string]string
	// apply uses `kubectl apply` (client-side, with its last-applied
	// annotation) instead of `kubectl create`.
	apply bool
	want  kubectlResult
}

// kubectlResult is what came back: the HTTP status of the write kubectl
// sent (0 when it sent none) and which of the expected field paths its
// message names.
type kubectlResult struct {
	Code  int
	Paths []string
}

// created is the outcome of an accepted object.
var created = kubectlResult{Code: 201}

// refused is a 422 naming every one of paths.
func refused(paths ...string) kubectlResult { return kubectlResult{Code: 422, Paths: paths} }

var kubectlObjects atomic.Int64

// runKubectl applies each input with the real kubectl, at most two at a
// time, and records its outcome.
func (s *suite) runKubectl(t *testing.T, inputs []kubectlInput) {
	t.Helper()
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("k%04d", kubectlObjects.Add(1))
			got, out, err := s.kubectl(in, name)
			if err != nil {
				t.Fatal(err)
			}
			if got.Code != in.want.Code || len(got.Paths) != len(in.want.Paths) {
				t.Logf("kubectl said: %.1500s", message(out))
			}
			s.expect(t, areaKubectl, in.name, in.want, got, got.Code == 422 && len(got.Paths) > 0)
		})
	}
}

// message is kubectl's output without its -v=6 log lines.
func message(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !klogLine.MatchString(line) {
			keep = append(keep, line)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

var klogLine = regexp.MustCompile(`^[IWE]\d{4} \d\d:\d\d:\d\d`)

// writeStatus finds the status of the last write in kubectl's -v=6 log,
// in klog's structured form or the older plain one.
var writeStatus = regexp.MustCompile(`(?:verb="(?:POST|PUT|PATCH)" url="[^"]*" status="|(?:POST|PUT|PATCH) https?://\S+ )(\d{3})`)

func (s *suite) kubectl(in kubectlInput, name string) (kubectlResult, string, error) {
	meta := obj{"name": name, "namespace": s.ns}
	if in.annotations != nil {
		meta["annotations"] = in.annotations
	}
	doc := obj{"apiVersion": apiVersions[in.kind], "kind": in.kind, "metadata": meta}
	if in.spec != nil {
		doc["spec"] = in.spec
	}
	manifest, err := json.Marshal(doc)
	if err != nil {
		return kubectlResult{}, "", fmt.Errorf("encode %s: %w", in.name, err)
	}
	verb := "create"
	if in.apply {
		verb = "apply"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, framework.Binary("kubectl"), "--kubeconfig="+cluster.Kubeconfig, "-v=6", verb, "-f", "-")
	cmd.Stdin = bytes.NewReader(manifest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a refusal exits 1; the log says what happened
	text := out.String()
	var got kubectlResult
	for _, m := range writeStatus.FindAllStringSubmatch(text, -1) {
		got.Code, _ = strconv.Atoi(m[1])
	}
	for _, p := range in.want.Paths {
		if strings.Contains(text, p+":") {
			got.Paths = append(got.Paths, p)
		}
	}
	return got, text, nil
}
