package webhooks

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	views := testViews(t)
	tests := []struct {
		name string
		kind string
		raw  string
		// want is the partial object the view sees; wantErr a failed decode.
		want    obj
		wantErr bool
	}{{
		name: "only the spec fields under profile paths, and the metadata a view reads (annotations only for a config in one)",
		kind: rackedCluster,
		raw: `{"apiVersion":"samples.scaleplane.io/v1alpha1","kind":"RackedCluster",
			"metadata":{"name":"db","namespace":"ns","generation":4,"uid":"u","labels":{"a":"b"},
				"annotations":{"x":"y"},"managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},
			"spec":{"replicas":3,"image":"scylla","racks":[{"name":"a","members":1,"storage":{"size":"1Gi"}}],"scaleConfig":{"threshold":0.5}},
			"status":{"replicas":2}}`,
		want: obj{
			"metadata": obj{"name": "db", "namespace": "ns", "generation": int64(4)},
			"spec": obj{"replicas": int64(3), "scaleConfig": obj{"threshold": 0.5},
				"racks": list{obj{"name": "a", "members": int64(1), "storage": obj{"size": "1Gi"}}}},
		},
	}, {
		name: "a config in an annotation: the annotations are decoded",
		kind: zonedDatabase,
		raw:  `{"metadata":{"name":"z","annotations":{"x":"y","scaleplane.io/scale-config":"{}"},"managedFields":[{}]}}`,
		want: obj{"metadata": obj{"name": "z", "annotations": obj{"x": "y", "scaleplane.io/scale-config": "{}"}}},
	}, {
		name: "the foreign kind: its deep replicas path and zones share one spec field",
		kind: zonedDatabase,
		raw:  `{"metadata":{"name":"z"},"spec":{"engine":"rocks","topology":{"replicasPerZone":2,"zones":[]}}}`,
		want: obj{"metadata": obj{"name": "z"}, "spec": obj{"topology": obj{"replicasPerZone": int64(2), "zones": list{}}}},
	}, {
		name: "null fields are absent, as the view reads them",
		kind: rackedCluster,
		raw:  `{"metadata":null,"spec":{"replicas":null,"racks":[]}}`,
		want: obj{"spec": obj{"racks": list{}}},
	}, {
		name: "no spec",
		kind: function,
		raw:  `{"metadata":{"name":"f"}}`,
		want: obj{"metadata": obj{"name": "f"}},
	}, {
		name: "field names match case-sensitively",
		kind: function,
		raw:  `{"Spec":{"replicas":1},"spec":{"Replicas":2}}`,
		want: obj{"spec": obj{}},
	}, {
		name: "a spec that is not an object is kept whole for the view to report",
		kind: rackedCluster,
		raw:  `{"metadata":{"name":"db","generation":"x"},"spec":5}`,
		want: obj{"metadata": obj{"name": "db", "generation": "x"}, "spec": int64(5)},
	}, {
		name:    "a number beyond float64 in the config is refused, even in a field no one reads",
		kind:    rackedCluster,
		raw:     `{"spec":{"scaleConfig":{"minReplicas":1,"x":1e700}}}`,
		wantErr: true,
	}, {
		name: "a config with escapes and an unknown field is decoded as the API machinery decodes it",
		kind: rackedCluster,
		raw:  `{"spec":{"scaleConfig":{"minReplicas":1,"x":{"y":[]},"triggers":[{"name":"q\u00e9","query":"up{a=\"b\"}","threshold":2}]}}}`,
		want: obj{"spec": obj{"scaleConfig": obj{"minReplicas": int64(1), "x": obj{"y": list{}},
			"triggers": list{obj{"name": "qé", "query": `up{a="b"}`, "threshold": int64(2)}}}}},
	}, {
		name:    "not JSON",
		kind:    rackedCluster,
		raw:     `{"spec":`,
		wantErr: true,
	}, {
		name:    "not an object",
		kind:    rackedCluster,
		raw:     `["spec"]`,
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := newDecoder(views[tc.kind].Layout()).decode([]byte(tc.raw))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("decoded %v", o.u.Object)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o.u.Object); diff != "" {
				t.Errorf("partial object (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecKeys(t *testing.T) {
	views := testViews(t)
	got := map[string][]string{}
	for kind, v := range views {
		got[kind] = specKeys(v.Layout())
	}
	want := map[string][]string{
		rackedCluster: {"replicas", "scaleConfig", "racks"},
		function:      {"replicas", "scaleConfig"},
		workerGroup:   {"replicas", "scalePolicy"},
		zonedDatabase: {"topology"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec keys (-want +got):\n%s", diff)
	}
}
