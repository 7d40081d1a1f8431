package deps

import (
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "k8s.io/api/autoscaling/v2"
	_ "k8s.io/apimachinery/pkg/util/validation/field"
	_ "k8s.io/client-go/kubernetes"
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "gomodules.xyz/jsonpatch/v2"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/prometheus/prometheus/promql"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "github.com/prometheus/prometheus/tsdb/chunkenc"
	_ "github.com/prometheus/prometheus/promql/promqltest"
	_ "github.com/prometheus/prometheus/tsdb"
	_ "github.com/google/go-cmp/cmp"
)
