package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/scaleplane/scaleplane/api/v1alpha1"
	"github.com/scaleplane/scaleplane/profile"
	"github.com/scaleplane/scaleplane/profile/profiletest"
	"github.com/scaleplane/scaleplane/scaling"
)

// testSources are the trigger sources a program with scaleplane's trigger
// autoscaler registers, built once: the real "cron" source and, as
// "promql", stubQuerySource. The real query source runs the PromQL engine,
// which lives in module controllers/autoscaler (this module does not
// require it); its checks are held there by TestV5PromQLSource,
// TestV10PromQLSourceCost and TestV11PromQLSourceReferences. The
// validating handler admits triggers against these sources.
var testSources = sync.OnceValue(func() *scaling.Sources {
	s := scaling.NewSources()
	if err := s.Register(scaling.SourceCron, scaling.CronSource()); err != nil {
		panic(err)
	}
	if err := s.Register(scaling.SourcePromQL, stubQuerySource()); err != nil {
		panic(err)
	}
	return s
})

// stubRefusal starts a query stubQuerySource refuses; the rest of the query
// is the message of the refusal.
const stubRefusal = "refuse: "

// stubQuerySource checks a query trigger as the PromQL source does, without
// the engine: a query is required and metadata is forbidden, and a query
// that starts with stubRefusal is invalid, as one the engine cannot parse
// or one over a cost bound is. Every other query is accepted.
func stubQuerySource() scaling.Source {
	return scaling.Source{
		Validate: func(t scaling.Trigger, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch {
			case strings.TrimSpace(t.Query) == "":
				errs = append(errs, field.Required(p.Child("query"), "must be a query"))
			case strings.HasPrefix(t.Query, stubRefusal):
				errs = append(errs, field.Invalid(p.Child("query"), t.Query, strings.TrimPrefix(t.Query, stubRefusal)))
			}
			for _, key := range slices.Sorted(maps.Keys(t.Metadata)) {
				errs = append(errs, field.Forbidden(p.Child("metadata").Key(key), "a query trigger reads no metadata"))
			}
			return errs
		},
		New: func(context.Context, scaling.ScalerConfig) (scaling.Scaler, error) {
			return nil, errors.New("stubQuerySource builds no scaler")
		},
	}
}

// obj is a JSON object literal for test objects.
type obj = map[string]interface{}

// list is a JSON list literal.
type list = []interface{}

// objBuilder builds workload objects as the API server would send them:
// makeObj(rackedCluster, "db").set(".spec.replicas", 3).raw().
type objBuilder struct {
	kind string
	o    obj
}

// The kinds the tests use: the three samples and a foreign kind whose
// profile puts everything somewhere else (see foreignProfile).
const (
	rackedCluster = "RackedCluster"
	function      = "Function"
	workerGroup   = "WorkerGroup"
	zonedDatabase = "ZonedDatabase"
)

func makeObj(kind, name string) *objBuilder {
	apiVersion := profile.SampleGroup + "/" + profile.SampleVersion
	if kind == zonedDatabase {
		apiVersion = "data.example.org/v1beta1"
	}
	return &objBuilder{kind: kind, o: obj{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": obj{
			"name": name, "namespace": "team-a", "uid": "9c4c5f3e-0000-4000-8000-000000000001",
			"generation": 1, "resourceVersion": "100",
			"labels": obj{"app": name},
		},
	}}
}

// set puts v at a dotted path, creating objects on the way.
func (b *objBuilder) set(path string, v interface{}) *objBuilder {
	segs := strings.Split(strings.TrimPrefix(path, "."), ".")
	m := b.o
	for _, s := range segs[:len(segs)-1] {
		next, ok := m[s].(obj)
		if !ok {
			next = obj{}
			m[s] = next
		}
		m = next
	}
	m[segs[len(segs)-1]] = v
	return b
}

func (b *objBuilder) replicas(n int) *objBuilder { return b.set(b.replicasPath(), n) }

func (b *objBuilder) replicasPath() string {
	if b.kind == zonedDatabase {
		return ".spec.topology.replicasPerZone"
	}
	return ".spec.replicas"
}

// config sets the scale config where the kind's profile keeps it; for the
// foreign kind that is a JSON annotation.
func (b *objBuilder) config(c obj) *objBuilder {
	switch b.kind {
	case workerGroup:
		return b.set(".spec.scalePolicy", c)
	case zonedDatabase:
		data, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		return b.annotate(v1alpha1.AnnotationScaleConfig, string(data))
	}
	return b.set(".spec.scaleConfig", c)
}

func (b *objBuilder) annotate(k, v string) *objBuilder {
	md := b.o["metadata"].(obj)
	a, ok := md["annotations"].(obj)
	if !ok {
		a = obj{}
		md["annotations"] = a
	}
	a[k] = v
	return b
}

// groups sets the racks (or zones) from name/members pairs; a negative
// members count of -1000 leaves members out.
func (b *objBuilder) groups(pairs ...interface{}) *objBuilder {
	path, nameField, membersField := ".spec.racks", "name", "members"
	if b.kind == zonedDatabase {
		path, nameField, membersField = ".spec.topology.zones", "zoneName", "size"
	}
	var l list
	for i := 0; i < len(pairs); i += 2 {
		g := obj{nameField: pairs[i], "storage": "10Gi"}
		if n := pairs[i+1].(int); n != absent {
			g[membersField] = n
		}
		l = append(l, g)
	}
	return b.set(path, l)
}

// absent leaves a group's members out.
const absent = -1000

func (b *objBuilder) raw() []byte {
	data, err := json.Marshal(b.o)
	if err != nil {
		panic(err)
	}
	return data
}

// foreignProfile is a kind scaleplane was not designed from: another group,
// replicas deep in the spec, zones named by zoneName with a size, status
// zones as a map, and the scale config in an annotation. The e2e suite
// installs a CRD of this shape (e2e/admission/testdata).
func foreignProfile() v1alpha1.ScaleProfileSpec { return profiletest.ZonedDatabase() }

// views are the views of the three samples and the foreign kind, by kind.
func testViews(t testing.TB) map[string]*profile.Compiled {
	t.Helper()
	out := map[string]*profile.Compiled{}
	for _, p := range append(profile.Samples(), foreignProfile()) {
		v, err := profile.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Target.Kind] = v
	}
	return out
}

// request is an admission request for view's kind.
func request(view *profile.Compiled, op admissionv1.Operation, name string, object, old []byte) admission.Request {
	gvk, gvr := view.GVK(), view.GVR()
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       types.UID("req-" + name),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		Name:      name,
		Namespace: "team-a",
		Operation: op,
		Object:    runtime.RawExtension{Raw: object},
		OldObject: runtime.RawExtension{Raw: old},
	}}
}

func create(view *profile.Compiled, b *objBuilder) admission.Request {
	return request(view, admissionv1.Create, b.o["metadata"].(obj)["name"].(string), b.raw(), nil)
}

func update(view *profile.Compiled, old, cur *objBuilder) admission.Request {
	return request(view, admissionv1.Update, cur.o["metadata"].(obj)["name"].(string), cur.raw(), old.raw())
}

func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }
