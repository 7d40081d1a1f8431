// Package crdcorpus is the verified-CRD matrix: real upstream workload CRDs
// (vendored unchanged in testdata/crds, each with its source) and what
// scaleplane does with each today, step by step, from `scaleplane profile
// init` to deleting an object. The e2e test of this package runs every CRD
// through that path with the real binaries and asserts each outcome of the
// table below; docs/crd-compatibility.md is generated from the same table.
//
// It owns the table and its rendering only. It must not contain scaleplane
// logic: a CRD that scaleplane serves badly is recorded here as it is, with
// a note, and fixed where the behaviour lives.
package crdcorpus

import (
	"fmt"
	"slices"
	"strings"
)

// Outcome is what one step does today.
type Outcome int

const (
	// Works: the step does what a user asks of it.
	Works Outcome = iota + 1
	// Refused: the step is refused, and its message contains Result.Says.
	Refused
	// NotRun: the step cannot be tried for this CRD today (Result.Why).
	NotRun
	// Broken: a scaleplane bug, asserted as it is today (Result.Why): the
	// step is admitted but does not do what it says, or is refused with a
	// message that is wrong. What Result.Says is depends on the step.
	Broken
)

// Result is the expected outcome of one step for one CRD.
type Result struct {
	Outcome Outcome
	// Says is text the refusal must contain (Refused only).
	Says string
	// Why says, for the document, why a step is refused or not run.
	Why string
}

func works() Result                   { return Result{Outcome: Works} }
func refused(says, why string) Result { return Result{Outcome: Refused, Says: says, Why: why} }
func notRun(why string) Result        { return Result{Outcome: NotRun, Why: why} }
func broken(says, why string) Result  { return Result{Outcome: Broken, Says: says, Why: why} }

// CRD is one upstream CRD of the corpus and what each step does with it.
type CRD struct {
	// File is the vendored CRD under testdata/crds.
	File string
	// Name is the CRD's metadata.name; Group, Version, Resource and Kind
	// its served storage version.
	Name, Group, Version, Resource, Kind string
	// Clustered is a cluster-scoped kind.
	Clustered bool
	// Handle is a kind without /scale for which profile init prints a
	// ScaleHandle (with --name demo): the path applies that output as
	// printed, creates the object (Body) and runs Scale as kubectl scale
	// on the handle, every member group following; Replicas is then a
	// jsonpath listing every group's count. Delete deletes the handle,
	// then the object.
	Handle bool
	// ShortName is the CRD's first short name ("" for none).
	ShortName string
	// Repo is the upstream repository (owner/name), Commit the commit the
	// file was taken at, Path the file in it, License the repository's.
	Repo, Commit, Path, License string
	// Shape says what the CRD brings to the matrix.
	Shape string
	// Body is the spec of a small valid object (YAML flow), with its
	// replicas field at 2.
	Body string
	// Replicas is the object's replicas field (the /scale
	// specReplicasPath), as a kubectl jsonpath.
	Replicas string

	// The steps of the path, in the order the test runs them (Unset runs
	// beside them, on an object of its own). Init is
	// `scaleplane profile init --crd` (then config check, kubectl apply
	// --server-side and the ScaleProfile Active); the rest run only when
	// Init works. Scale is kubectl scale 2 -> 3; Zero is kubectl scale to
	// 0; HPA is kubectl autoscale --min=4 (the real HPA controller raises
	// the count through /scale); Trigger is a scale config with a PromQL
	// trigger that scaleplane's autoscaler follows to 5; Sleep is a scale
	// config with minReplicas 0 and an idle timeout, with which that
	// autoscaler takes the workload to 0; Delete is kubectl delete.
	// Unset is creating an object without its replicas field (Body with
	// that field left out); when it works, the field then reads
	// UnsetReads ("" for absent): the schema's default, or what
	// scaleplane's defaulting writes.
	Unset      Result
	UnsetReads string
	// Explain is `scaleplane explain NAMESPACE/SHORTNAME/NAME` after the
	// trigger step (NotRun for a kind without a short name); Broken when it
	// fails saying Says.
	Explain Result
	// Range is kubectl scale above a scale config's range [2, 4]: it
	// works when S1 refuses it naming the kind's own replicas field;
	// Broken when the refusal says Says instead.
	Init, Scale, Zero, HPA, Range, Trigger, Sleep, Delete Result
	// Edit, when set, is a hand edit of profile init's output before it is
	// applied: this entry is then a variant of another entry of the same
	// CRD, run after the unedited ones (the goal is none).
	Edit *Edit
	// Note is anything else a user of this CRD should know.
	Note string
}

// Edit replaces Old with New in profile init's output, for the reason Why.
type Edit struct{ Old, New, Why string }

// Source is the URL of the vendored file at its commit.
func (c CRD) Source() string {
	return fmt.Sprintf("https://github.com/%s/blob/%s/%s", c.Repo, c.Commit, c.Path)
}

const (
	noScale     = "has no served version with a /scale subresource"
	noScaleWhy  = "no /scale subresource, and no list of member groups a ScaleHandle could size (the count is the single field `spec.trainer.numNodes`): profile init says to add /scale to the CRD"
	handleWhy   = "no /scale: profile init prints a ScaleHandle (scaleplane's own kind with /scale) for the object; the corpus runs kubectl scale and delete on it, e2e/scalehandle the HPA, KEDA, triggers and explain"
	zeroMinWhy  = "the replicas field has `minimum: 1`; scaleplane refuses the write, saying the kind cannot reach 0 and which counts it can"
	apache      = "Apache-2.0"
	minimumText = "should be greater than or equal to 1"
)

// handleNotRun is every step but Scale and Delete of a ScaleHandle row.
var handleNotRun = notRun(handleWhy)

// Corpus is the matrix, one entry per vendored CRD.
var Corpus = []CRD{{
	File: "functions.serverless.kyma-project.io.yaml", Name: "functions.serverless.kyma-project.io",
	Group: "serverless.kyma-project.io", Version: "v1alpha2", Resource: "functions", Kind: "Function", ShortName: "fn",
	Repo: "kyma-project/serverless", Commit: "779485d15f9c15a0da7ecb42e27688c58301c1cd", Path: "config/buildless-serverless/templates/crds.yaml", License: apache,
	Shape:    "scale config in the spec (`spec.scaleConfig`, both bounds `minimum: 1`), `spec.replicas` defaulted to 1",
	Body:     `{runtime: python312, source: {inline: {source: "def main(event, context): return 'ok'"}}, replicas: 2}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(),
	Zero: refused("the CRD's schema requires a value of at least 1 (minimum); scale to a count from 1 to 1000",
		"`spec.scaleConfig.minReplicas` and `maxReplicas` have `minimum: 1`: a Function's scale config cannot hold 0, and scaleplane refuses the write saying so and which counts it can take"),
	HPA:     works(),
	Range:   works(),
	Trigger: notRun("`spec.scaleConfig` has room only for minReplicas and maxReplicas (the API server prunes triggers); triggers need the profile's scaleConfig switched to the annotation"),
	Sleep:   notRun("as for triggers: `spec.scaleConfig` has no room for `idle`"),
	Unset:   works(), UnsetReads: "1",
	Explain: works(), Delete: works(),
}, {
	File: "functions.serverless.kyma-project.io.yaml", Name: "functions.serverless.kyma-project.io",
	Group: "serverless.kyma-project.io", Version: "v1alpha2", Resource: "functions", Kind: "Function", ShortName: "fn",
	Repo: "kyma-project/serverless", Commit: "779485d15f9c15a0da7ecb42e27688c58301c1cd", Path: "config/buildless-serverless/templates/crds.yaml", License: apache,
	Shape:    "as above, with the scale config moved to the annotation",
	Body:     `{runtime: python312, source: {inline: {source: "def main(event, context): return 'ok'"}}, replicas: 2}`,
	Replicas: ".spec.replicas",
	Edit: &Edit{Old: "path: .spec.scaleConfig", New: "annotation: scaleplane.io/scale-config",
		Why: "`spec.scaleConfig` can hold only the bounds; the annotation holds triggers and idle settings"},
	Init: works(), Unset: works(), UnsetReads: "1", Scale: works(), Zero: works(), HPA: works(),
	Range: works(), Trigger: works(), Sleep: works(), Explain: works(), Delete: works(),
}, {
	File: "kafkanodepools.kafka.strimzi.io.yaml", Name: "kafkanodepools.kafka.strimzi.io",
	Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkanodepools", Kind: "KafkaNodePool", ShortName: "knp",
	Repo: "strimzi/strimzi-kafka-operator", Commit: "8541da1e336bdcda9647aeacfbc2048e57580a52", Path: "packaging/install/cluster-operator/045-Crd-kafkanodepool.yaml", License: apache,
	Shape:    "small hand-written schema (not controller-gen); `spec.replicas` required, `minimum: 0`",
	Body:     `{replicas: 2, roles: [broker], storage: {type: ephemeral}}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(), Zero: works(), HPA: works(), Range: works(), Trigger: works(), Sleep: works(), Unset: refused("Required value", "`spec.replicas` is required by the schema"), UnsetReads: "",
	Explain: works(), Delete: works(),
}, {
	File: "kafkaconnectors.kafka.strimzi.io.yaml", Name: "kafkaconnectors.kafka.strimzi.io",
	Group: "kafka.strimzi.io", Version: "v1", Resource: "kafkaconnectors", Kind: "KafkaConnector", ShortName: "kctr",
	Repo: "strimzi/strimzi-kafka-operator", Commit: "8541da1e336bdcda9647aeacfbc2048e57580a52", Path: "packaging/install/cluster-operator/047-Crd-kafkaconnector.yaml", License: apache,
	Shape:    "replicas named otherwise (`spec.tasksMax`, `minimum: 1`), no labelSelectorPath (no pods to count)",
	Body:     `{class: org.example.Sink, tasksMax: 2}`,
	Replicas: ".spec.tasksMax",
	Init:     works(), Scale: works(),
	Zero:    refused(minimumText, "`spec.tasksMax` has `minimum: 1`; the API server refuses the write"),
	HPA:     works(),
	Range:   works(),
	Trigger: works(),
	Sleep:   refused("the CRD's schema requires a value of at least 1 (minimum)", "`spec.tasksMax` has `minimum: 1`: scaleplane refuses a scale config with `minReplicas: 0` in the annotation, saying the kind cannot reach 0"),
	Unset:   works(), UnsetReads: "",
	Explain: works(), Delete: works(),
}, {
	File: "nodepools.karpenter.sh.yaml", Name: "nodepools.karpenter.sh",
	Group: "karpenter.sh", Version: "v1", Resource: "nodepools", Kind: "NodePool", Clustered: true,
	Repo: "kubernetes-sigs/karpenter", Commit: "2266468104f36373ed002241afaee2d3bbc26078", Path: "pkg/apis/crds/karpenter.sh_nodepools.yaml", License: apache,
	Shape:    "cluster-scoped; status replicas elsewhere (`.status.nodes`); CEL rules on `spec.replicas`",
	Body:     `{replicas: 2, template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}}}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(), Zero: works(),
	HPA: refused("the server could not find the requested resource",
		"an HPA is namespaced and its scale client reads a namespaced /scale: it cannot scale a cluster-scoped kind"),
	Range: works(), Trigger: works(), Sleep: works(), Unset: works(), UnsetReads: "",
	Explain: notRun("the CRD has no short name"), Delete: works(),
}, {
	File: "machinedeployments.cluster.x-k8s.io.yaml", Name: "machinedeployments.cluster.x-k8s.io",
	Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machinedeployments", Kind: "MachineDeployment", ShortName: "md",
	Repo: "kubernetes-sigs/cluster-api", Commit: "ae7ff047db499ac3858ade268ba38db8c9f128bb", Path: "core/config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml", License: apache,
	Shape:    "two served versions (v1beta1, v1beta2), /scale on both",
	Body:     `{clusterName: demo, replicas: 2, selector: {matchLabels: {md: demo}}, template: {metadata: {labels: {md: demo}}, spec: {clusterName: demo, bootstrap: {dataSecretName: demo}, infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: demo}}}}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(), Zero: works(), HPA: works(), Range: works(), Trigger: works(), Sleep: works(), Unset: works(), UnsetReads: "",
	Explain: works(), Delete: works(),
}, {
	File: "clusters.postgresql.cnpg.io.yaml", Name: "clusters.postgresql.cnpg.io",
	Group: "postgresql.cnpg.io", Version: "v1", Resource: "clusters", Kind: "Cluster",
	Repo: "cloudnative-pg/cloudnative-pg", Commit: "a95a534dbe0854495b863bbc1b7651f74d310916", Path: "config/crd/bases/postgresql.cnpg.io_clusters.yaml", License: apache,
	Shape:    "large (460 KiB); replicas named otherwise (`spec.instances`, default 1, `minimum: 1`)",
	Body:     `{instances: 2, storage: {size: 1Gi}}`,
	Replicas: ".spec.instances",
	Init:     works(), Scale: works(),
	Zero:    refused(minimumText, "`spec.instances` has `minimum: 1`; the API server refuses the write"),
	HPA:     works(),
	Range:   works(),
	Trigger: works(),
	Sleep:   refused("the CRD's schema requires a value of at least 1 (minimum)", "`spec.instances` has `minimum: 1`: scaleplane refuses a scale config with `minReplicas: 0` in the annotation, saying the kind cannot reach 0"),
	Unset:   works(), UnsetReads: "1",
	Explain: notRun("the CRD has no short name"), Delete: works(),
}, {
	File: "leaderworkersets.leaderworkerset.x-k8s.io.yaml", Name: "leaderworkersets.leaderworkerset.x-k8s.io",
	Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets", Kind: "LeaderWorkerSet", ShortName: "lws",
	Repo: "kubernetes-sigs/lws", Commit: "060ab4da17eea1f0865fcbd3236bb1075e2cea32", Path: "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml", License: apache,
	Shape:    "very large (1.3 MB: only server-side apply installs it); `spec.replicas` defaulted to 1, maximum 1000000",
	Body:     `{replicas: 2, leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: worker, image: example.invalid/worker}]}}}}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(), Zero: works(), HPA: works(), Range: works(), Trigger: works(), Sleep: works(), Unset: works(), UnsetReads: "1",
	Explain: works(), Delete: works(),
}, {
	File: "rollouts.argoproj.io.yaml", Name: "rollouts.argoproj.io",
	Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts", Kind: "Rollout", ShortName: "ro",
	Repo: "argoproj/argo-rollouts", Commit: "9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d", Path: "manifests/crds/rollout-crd.yaml", License: apache,
	Shape:    "large (560 KiB); /scale reads status replicas from `.status.HPAReplicas`",
	Body:     `{replicas: 2, selector: {matchLabels: {app: demo}}, template: {metadata: {labels: {app: demo}}, spec: {containers: [{name: app, image: example.invalid/app}]}}}`,
	Replicas: ".spec.replicas",
	Init:     works(), Scale: works(), Zero: works(), HPA: works(), Range: works(), Trigger: works(), Sleep: works(), Unset: works(), UnsetReads: "",
	Explain: works(), Delete: works(),
}, {
	File: "pytorchjobs.kubeflow.org.yaml", Name: "pytorchjobs.kubeflow.org",
	Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs", Kind: "PyTorchJob",
	Repo: "kubeflow/training-operator", Commit: "ee1162919408cbca4a899f2916cfcd0ecd562881", Path: "manifests/base/crds/kubeflow.org_pytorchjobs.yaml", License: apache,
	Shape: "large (595 KiB); replica groups as a map keyed by role, /scale through one key (`.spec.pytorchReplicaSpecs.Worker.replicas`)",
	Init: broken(`the CRD's schema has no field "Worker" under .spec.pytorchReplicaSpecs`,
		"scaleplane bug: the /scale paths go through a map (`additionalProperties`), which the API server serves, but profile init (and config check) look for a named property `Worker` and refuse the CRD; no profile edit helps"),
}, {
	File: "scyllaclusters.scylla.scylladb.com.yaml", Name: "scyllaclusters.scylla.scylladb.com",
	Group: "scylla.scylladb.com", Version: "v1", Resource: "scyllaclusters", Kind: "ScyllaCluster",
	Repo: "scylladb/scylla-operator", Commit: "adefed4ef914e8b856a52bc638e2e61e9d3e15d6", Path: "pkg/api/scylla/v1/scylla.scylladb.com_scyllaclusters.yaml", License: apache,
	Shape:    "no /scale; racks as a list (`.spec.datacenter.racks[].members`), their status as a map (`.status.racks.<name>`)",
	Handle:   true,
	Body:     `{version: 6.2.0, agentVersion: 3.4.0, datacenter: {name: dc1, racks: [{name: a, members: 2, storage: {capacity: 1Gi}}, {name: b, members: 1, storage: {capacity: 1Gi}}]}}`,
	Replicas: ".spec.datacenter.racks[*].members",
	Init:     works(), Scale: works(), Delete: works(),
	Zero: handleNotRun, HPA: handleNotRun, Range: handleNotRun, Trigger: handleNotRun, Sleep: handleNotRun, Explain: handleNotRun, Unset: handleNotRun,
}, {
	File: "rayclusters.ray.io.yaml", Name: "rayclusters.ray.io",
	Group: "ray.io", Version: "v1", Resource: "rayclusters", Kind: "RayCluster",
	Repo: "ray-project/kuberay", Commit: "feeaf72facab4881ba2b179248bb67315634e229", Path: "ray-operator/config/crd/bases/ray.io_rayclusters.yaml", License: apache,
	Shape:    "no /scale; very large (910 KiB, two versions); worker groups as a list with their own replicas, minReplicas and maxReplicas",
	Handle:   true,
	Body:     `{headGroupSpec: {template: {spec: {containers: [{name: head, image: example.invalid/ray}]}}}, workerGroupSpecs: [{groupName: a, replicas: 2, minReplicas: 0, maxReplicas: 10, template: {spec: {containers: [{name: worker, image: example.invalid/ray}]}}}, {groupName: b, replicas: 1, minReplicas: 0, maxReplicas: 10, template: {spec: {containers: [{name: worker, image: example.invalid/ray}]}}}]}`,
	Replicas: ".spec.workerGroupSpecs[*].replicas",
	Init:     works(), Scale: works(), Delete: works(),
	Zero: handleNotRun, HPA: handleNotRun, Range: handleNotRun, Trigger: handleNotRun, Sleep: handleNotRun, Explain: handleNotRun, Unset: handleNotRun,
}, {
	File: "trainjobs.trainer.kubeflow.org.yaml", Name: "trainjobs.trainer.kubeflow.org",
	Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs", Kind: "TrainJob",
	Repo: "kubeflow/training-operator", Commit: "a55f03a8ccb7798a741ff3c4af502d367ed0f6d2", Path: "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml", License: apache,
	Shape: "no /scale; the count is `spec.trainer.numNodes`",
	Init:  refused(noScale, noScaleWhy),
}}

// Markdown renders the matrix as docs/crd-compatibility.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# CRD compatibility

<!-- Generated from the table in e2e/crdcorpus/corpus.go; do not edit by hand.
Regenerate with: UPDATE_GOLDEN=1 go -C e2e test ./crdcorpus -run TestCompatibilityDoc -->

Real upstream workload CRDs, vendored unchanged in ` + "`testdata/crds`" + ` (see its README), and what
scaleplane does with each today. ` + "`go -C e2e test ./crdcorpus`" + ` runs every one through the whole path with
the real binaries (kube-apiserver, kube-controller-manager with its HPA controller, kubectl and
the scaleplane binary). The columns, in the order the test runs them:

- **profile init**: ` + "`scaleplane profile init --crd NAME`" + ` against the served CRD, its output checked by
  ` + "`scaleplane config check`" + `, applied with ` + "`kubectl apply --server-side`" + `, the ScaleProfile ` + "`Active`" + ` in
  ` + "`kubectl get sprof`" + `; then an object is created with its replicas field at 2 (a scale config in the
  spec is pinned at 2, M1); for a kind without ` + "`/scale`" + `, *ScaleHandle*: ` + "`profile init --name demo`" + `
  prints a ScaleHandle for the object, applied as printed, and **scale** is ` + "`kubectl scale scalehandle/demo --replicas=3`" + `,
  every member group of the object following, **delete** deletes the handle and the object;
- **no replicas**: an object created without its replicas field, which then reads the value shown
  (the schema's default) or stays absent (–);
- **scale**: ` + "`kubectl scale --replicas=3`" + `;
- **zero**: ` + "`kubectl scale --replicas=0`" + `;
- **HPA**: ` + "`kubectl autoscale --min=4 --max=6`" + `: the real HPA controller raises the count through
  ` + "`/scale`" + `, and the object's Scaling must say that a foreign autoscaler holds it;
- **range (S1)**: with a scale config range [2, 4], ` + "`kubectl scale --replicas=6`" + ` is refused, the message
  naming the kind's own replicas field;
- **triggers**: a scale config with a PromQL trigger, followed to 5 by scaleplane's autoscaler; the
  Scaling's mode and ` + "`scaleplane explain NAMESPACE/RESOURCE.GROUP/NAME`" + ` say ` + "`triggers`" + `;
- **explain**: ` + "`scaleplane explain NAMESPACE/SHORTNAME/NAME`" + ` with the kind's first short name;
- **sleep**: a scale config with ` + "`minReplicas: 0`" + ` and an idle timeout, taken to 0 by the same
  autoscaler, its Scaling ` + "`ScaledToZero`" + `;
- **delete**: ` + "`kubectl delete`" + `.

✅ works; ⛔ refused, rightly (the message is asserted); ⚠️ a scaleplane bug, asserted as it behaves
today (admitted but wrong, or refused with a wrong message); ➖ not possible today. Each footnote
says why. When an outcome changes, the test fails: update the table in ` + "`e2e/crdcorpus/corpus.go`" + `.

| CRD | version | shape | profile init | no replicas | scale | zero | HPA | range (S1) | triggers | explain | sleep | delete | profile edit |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
`)
	var notes []string
	mark := func(r Result) string {
		switch r.Outcome {
		case Works:
			return "✅"
		case Refused, NotRun, Broken:
			n := slices.Index(notes, r.Why) + 1
			if n == 0 {
				notes = append(notes, r.Why)
				n = len(notes)
			}
			sym := map[Outcome]string{Refused: "⛔", NotRun: "➖", Broken: "⚠️"}[r.Outcome]
			return fmt.Sprintf("%s [%d]", sym, n)
		}
		return "➖"
	}
	for _, c := range Corpus {
		edit, kind := "none", c.Kind
		if c.Edit != nil {
			edit = fmt.Sprintf("`%s` → `%s`: %s", c.Edit.Old, c.Edit.New, c.Edit.Why)
			kind += " (edited profile)"
		}
		cells := []string{
			fmt.Sprintf("[%s](%s) `%s`", kind, c.Source(), c.Group),
			fmt.Sprintf("%s (%s@%s)", c.Version, c.Repo, c.Commit[:7]),
			c.Shape,
			mark(c.Init),
		}
		if c.Handle {
			cells[3] += " (ScaleHandle)"
		}
		if c.Init.Outcome == Works {
			reads := c.UnsetReads
			if reads == "" {
				reads = "–"
			}
			unset := mark(c.Unset)
			if c.Unset.Outcome == Works {
				unset += " " + reads
			}
			cells = append(cells, unset, mark(c.Scale), mark(c.Zero), mark(c.HPA), mark(c.Range), mark(c.Trigger), mark(c.Explain), mark(c.Sleep), mark(c.Delete), edit)
		} else {
			cells = append(cells, "➖", "➖", "➖", "➖", "➖", "➖", "➖", "➖", "➖", "➖")
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n")
	for i, n := range notes {
		fmt.Fprintf(&b, "%d. %s\n", i+1, n)
	}
	b.WriteString(`
Every profile above is what ` + "`profile init`" + ` prints, applied without a hand edit, except in the rows
marked *edited profile*, which show what the one edit in their last column changes. The kinds'
operators do not run in the test: objects are admitted, defaulted and scaled, and their status is
what the test writes (none). The licenses of the vendored files are listed in
` + "`testdata/crds/README.md`" + `.
`)
	return b.String()
}

// README renders testdata/crds/README.md: where each vendored file comes
// from and under which license.
func README() string {
	var b strings.Builder
	b.WriteString(`# Upstream workload CRDs

<!-- Generated from the table in e2e/crdcorpus/corpus.go; do not edit by hand.
Regenerate with: UPDATE_GOLDEN=1 go -C e2e test ./crdcorpus -run TestCompatibilityDoc -->

Real CustomResourceDefinitions of workload operators, vendored as test data for the verified-CRD
matrix (` + "`e2e/crdcorpus`" + `, [docs/crd-compatibility.md](../../docs/crd-compatibility.md)). Each file starts with a
three-line header naming its source at a commit and its license, followed by the upstream file
unchanged (the one exception is said in its header). Every repository below is licensed
Apache-2.0, whose terms allow redistribution with the notice; the header is that notice.

| file | kind | upstream repository | path | commit | license |
| --- | --- | --- | --- | --- | --- |
`)
	for _, c := range Corpus {
		if c.Edit != nil {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s `%s/%s` | [%s](https://github.com/%s) | [%s](%s) | `%s` | %s |\n",
			c.File, c.Kind, c.Group, c.Version, c.Repo, c.Repo, c.Path, c.Source(), c.Commit[:12], c.License)
	}
	b.WriteString(`
To add a CRD: take the file at a commit (from a release or the default branch), prepend the
header, add an entry to ` + "`Corpus`" + ` in ` + "`e2e/crdcorpus/corpus.go`" + ` with what each step does today, and
regenerate this file and the compatibility document.
`)
	return b.String()
}
