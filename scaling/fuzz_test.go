package scaling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/scaling"
)

// FuzzDecodeDefaultValidate drives the admission path end to end with
// arbitrary annotation bytes: strict decode (V9), defaulting (M1–M6) on
// CREATE and UPDATE, validation, and the controller decisions. None may
// panic; Default must be idempotent and leave its inputs alone; a fan-out
// write must settle in one step.
func FuzzDecodeDefaultValidate(f *testing.F) {
	for _, seed := range []string{
		`{"minReplicas":1,"maxReplicas":5}`,
		`{"maxReplicas":0}`,
		`{"minReplicas":3}`,
		`{}`,
		`null`,
		`{"minReplicas":0,"maxReplicas":4,"idle":{"replicasAtStart":1,"timeoutSeconds":300}}`,
		`{"minReplicas":1,"maxReplicas":10,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}],` +
			`"behavior":{"scaleUp":{"policies":[{"type":"Pods","value":4,"periodSeconds":15}],"tolerance":"0.05"},"scaleDown":{"stabilizationWindowSeconds":300,"policies":[]}}}`,
		`{"triggers":[{"name":"rps","type":"AverageValue","query":"sum(rate(x{ns=\"${namespace}\"}[1m]))","threshold":10,"activationThreshold":1}],"maxReplicas":3}`,
		`{"triggers":[{"name":"a","type":"Value","query":"foo[5m]","threshold":0},{"name":"a","type":"x","query":"${"}]}`,
		`{"schedule":{"timeZone":"Europe/Paris","wakeUp":["07:30","25:00"],"scaleDownTimeout":[{"time":"19:00","seconds":60}]}}`,
		`{"metrics":[{"type":"External","external":{"metric":{"name":"q","selector":{"matchExpressions":[{"key":"a","operator":"In"}]}},"target":{"type":"Value","value":"-1"}}}]}`,
		`{"minReplicas":-2147483648,"maxReplicas":2147483647}`,
		`{"minReplicas":1,"Foo":2}`,
		`[`,
	} {
		f.Add([]byte(seed), int32(3), true, uint8(3), int32(2), false, true)
		f.Add([]byte(seed), int32(0), false, uint8(0), int32(0), true, false)
	}
	path := field.NewPath("metadata", "annotations").Key("scaleplane.io/scale-config")
	f.Fuzz(func(t *testing.T, data []byte, replicas int32, hasReplicas bool, racks uint8, oldReplicas int32, inAnnotation, targetSelf bool) {
		c, errs := profile.DecodeConfigJSON(data, path)
		if len(errs) > 0 {
			if c != nil {
				t.Fatalf("DecodeConfigJSON returned a config along with errors %v", errs)
			}
			return
		}
		l := ctLayout()
		l.ConfigInAnnotation = inAnnotation
		l.TargetSelf = targetSelf
		cur := scaling.Workload{Config: c, Groups: ctRacks(make([]int32, racks%5)...)}
		if hasReplicas {
			cur.Replicas = &replicas
		}
		old := scaling.Default(nil, scaling.Workload{Replicas: &oldReplicas, Config: c.DeepCopy()}, l)

		scaling.Validate(cur, l, ctSources())
		for _, o := range []*scaling.Workload{nil, &old} {
			before := cur.Config.DeepCopy()
			once := scaling.Default(o, cur, l)
			if diff := cmp.Diff(before, cur.Config); diff != "" {
				t.Fatalf("Default mutated its input (-before +after):\n%s", diff)
			}
			twice := scaling.Default(o, once, l)
			if diff := cmp.Diff(once, twice); diff != "" {
				t.Fatalf("Default is not idempotent (-once +twice):\n%s", diff)
			}
			scaling.Validate(once, l, ctSources())

			fanned, write := scaling.FanOut(once)
			if _, again := scaling.FanOut(fanned); again {
				t.Fatalf("FanOut wants a second write after %v", write)
			}
			scaling.StatusReplicas(once)
			d := scaling.DecideHPA(once, l, nil, nil)
			if d.Want && (d.Min < 1 || d.Min >= d.Max || len(d.Metrics) == 0) {
				t.Fatalf("DecideHPA wants an HPA that cannot exist: %+v", d)
			}
		}
	})
}
