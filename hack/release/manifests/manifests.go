// Package manifests renders what scaleplane installs: a kustomize tree of
// config/ with kustomize's Go API (krusty, as kubectl kustomize runs it)
// and the Helm chart of config/helm/scaleplane with Helm's Go library (an
// install in client-only dry-run mode, as `helm template` does), and writes
// the release's pinned manifest and packaged chart. It only reads the
// repository and writes where it is told.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// Paths in the repository.
const (
	ChartDir      = "config/helm/scaleplane"
	DefaultDir    = "config/default"
	Namespace     = "scaleplane-system"
	ReleaseName   = "scaleplane"
	ManagerName   = "scaleplane-controller-manager"
	ContainerName = "manager"
	// KubeVersion is what the chart is rendered for: the control plane the
	// tests run.
	KubeVersion = "v1.37.1"
)

// Kustomize builds the kustomization in dir as `kubectl kustomize` does.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	opts := krusty.MakeDefaultOptions()
	// kubectl kustomize's order: namespaces and CRDs before what lives in
	// them, so the output applies in one pass.
	opts.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(opts)
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	data, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return Decode(data)
}

// Decode reads a multi-document YAML or JSON stream into objects whose
// numbers are int64 or float64 as the API machinery decodes them.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decode manifests: %w", err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if _, _, err := unstructured.UnstructuredJSONScheme.Decode(js, nil, u); err != nil {
			return nil, fmt.Errorf("decode manifests: %w", err)
		}
		objs = append(objs, u)
	}
}

// Encode writes objs as one YAML stream.
func Encode(objs []*unstructured.Unstructured) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		data, err := yamlMarshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// LoadChart loads the chart directory.
func LoadChart(dir string) (*chart.Chart, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	return c, nil
}

// RenderChart renders the chart with values into namespace as `helm
// template` does (client-only dry run, values validated against the
// chart's schema), and returns the objects in Helm's install order.
func RenderChart(c *chart.Chart, values map[string]any, namespace string) ([]*unstructured.Unstructured, error) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = ReleaseName, namespace
	inst.KubeVersion = kv
	inst.IncludeCRDs = true
	rel, err := inst.Run(c, values)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	return Decode([]byte(rel.Manifest))
}

// Find returns the object of kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// PinImage sets the manager container's image in every Deployment named
// ManagerName; it fails if there is none, so a renamed Deployment cannot
// ship unpinned.
func PinImage(objs []*unstructured.Unstructured, ref string) error {
	pinned := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != ManagerName {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return fmt.Errorf("deployment %s: %w", o.GetName(), err)
		}
		for i, c := range containers {
			m, ok := c.(map[string]any)
			if ok && m["name"] == ContainerName {
				m["image"] = ref
				containers[i] = m
				pinned++
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
	}
	if pinned != 1 {
		return fmt.Errorf("found %d %q containers in Deployment %s to pin, want 1", pinned, ContainerName, ManagerName)
	}
	return nil
}

// PackageChart writes the chart at dir as <out>/scaleplane-<version>.tgz
// with version, appVersion and, when digest is set, image.digest (and
// image.repository) written into its values.yaml, comments kept.
func PackageChart(dir, out, version, appVersion, repository, digest string) (string, error) {
	c, err := LoadChart(dir)
	if err != nil {
		return "", err
	}
	c.Metadata.Version, c.Metadata.AppVersion = version, appVersion
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("chart metadata: %w", err)
	}
	for _, f := range c.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		data, err := setImage(f.Data, repository, digest)
		if err != nil {
			return "", err
		}
		f.Data = data
		values, err := chartutil.ReadValues(data)
		if err != nil {
			return "", err
		}
		c.Values = values
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path, err := chartutil.Save(c, out)
	if err != nil {
		return "", fmt.Errorf("package chart: %w", err)
	}
	return path, nil
}

// setImage sets image.repository and image.digest in a values.yaml,
// keeping its comments and order.
func setImage(values []byte, repository, digest string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	img := mappingValue(doc.Content[0], "image")
	if img == nil {
		return nil, errors.New("values.yaml has no image mapping")
	}
	for key, val := range map[string]string{"repository": repository, "digest": digest} {
		if val == "" {
			continue
		}
		n := mappingValue(img, key)
		if n == nil {
			return nil, fmt.Errorf("values.yaml has no image.%s", key)
		}
		n.Value, n.Tag, n.Style = val, "!!str", 0
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Kinds lists "Kind/name" of objs, sorted, for messages.
func Kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// RepoRoot finds the repository root from dir (a directory with go.mod
// and config/).
func RepoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ChartDir, "Chart.yaml")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no scaleplane repository above %s", abs)
		}
	}
}

func yamlMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimPrefix(buf.String(), "---\n")), nil
}
