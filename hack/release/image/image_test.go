package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var testOptions = Options{
	RepoRoot: filepath.Join("..", "..", ".."),
	Version:  "v1.2.3-test.1",
	Commit:   "0123456789abcdef0123456789abcdef01234567",
	Created:  time.Date(2026, 11, 22, 3, 13, 39, 0, time.UTC),
}

var (
	builtOnce sync.Once
	built     v1.ImageIndex
	buildErr  error
)

// testIndex builds the image once for the package's tests.
func testIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary for two platforms")
	}
	builtOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		built, buildErr = Build(ctx, testOptions)
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return built
}

// TestReproducible builds the image a second time, from a new
// work directory, and writes both as layouts: the same sources give the
// same index digest and byte-identical index.json files.
func TestReproducible(t *testing.T) {
	first := testIndex(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	second, err := Build(ctx, testOptions)
	if err != nil {
		t.Fatalf("second build: %v", err)
	}
	d1, err := first.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := second.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		m1, _ := first.RawManifest()
		m2, _ := second.RawManifest()
		t.Fatalf("two builds of the same sources: index %s and %s\nfirst:  %s\nsecond: %s", d1, d2, m1, m2)
	}
	t.Logf("both builds: index %s", d1)
	dir := t.TempDir()
	var indexes [][]byte
	for _, name := range []string{"a", "b"} {
		idx := first
		if name == "b" {
			idx = second
		}
		out := filepath.Join(dir, name, "image")
		if err := WriteLayout(out, idx, testOptions.Version); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(out, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, data)
	}
	if diff := cmp.Diff(string(indexes[0]), string(indexes[1])); diff != "" {
		t.Errorf("index.json of the two layouts (-first +second):\n%s", diff)
	}
	// Written and read back, the layout names the same index.
	back, ann, err := ReadLayout(filepath.Join(dir, "a", "image"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != d1 {
		t.Errorf("layout read back: index %s, want %s", d, d1)
	}
	if ann[LabelRefName] != testOptions.Version {
		t.Errorf("index.json ref.name %q, want %q", ann[LabelRefName], testOptions.Version)
	}
}

// TestContents checks what is in each platform's image: the
// runtime configuration, the labels, and every file of every layer with
// its owner, mode and time.
func TestContents(t *testing.T) {
	idx := testIndex(t)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		LabelVersion:     "v1.2.3-test.1",
		LabelRevision:    "0123456789abcdef0123456789abcdef01234567",
		LabelSource:      "https://github.com/scaleplane/scaleplane",
		LabelCreated:     "2026-11-22T03:13:39Z",
		LabelTitle:       "scaleplane",
		LabelDescription: testOptions.Labels()[LabelDescription],
		LabelLicenses:    "Apache-2.0",
	}
	if diff := cmp.Diff(wantLabels, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	for _, m := range im.Manifests {
		t.Run(m.Platform.String(), func(t *testing.T) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			want := v1.Config{
				Entrypoint: []string{"/scaleplane"},
				User:       "65532:65532",
				WorkingDir: "/home/nonroot",
				Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
				Labels:     wantLabels,
			}
			if diff := cmp.Diff(want, cf.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if !cf.Created.Time.Equal(testOptions.Created) || cf.OS != "linux" || cf.Architecture != m.Platform.Architecture {
				t.Errorf("config created %s os %s arch %s; want %s linux %s", cf.Created.Time, cf.OS, cf.Architecture, testOptions.Created, m.Platform.Architecture)
			}
			for _, h := range cf.History {
				if !h.Created.Time.Equal(testOptions.Created) {
					t.Errorf("history %q created %s, want the commit time", h.CreatedBy, h.Created.Time)
				}
			}
			files := layerFiles(t, img)
			var names []string
			for name := range files {
				names = append(names, name)
			}
			sort.Strings(names)
			wantNames := []string{"etc/", "etc/group", "etc/nsswitch.conf", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "home/", "home/nonroot/", "scaleplane", "tmp/"}
			if diff := cmp.Diff(wantNames, names); diff != "" {
				t.Errorf("files in the image (-want +got); no shell, nothing else:\n%s", diff)
			}
			type meta struct {
				Mode     int64
				UID, GID int
			}
			wantMeta := map[string]meta{
				"scaleplane": {0o755, 0, 0}, "etc/passwd": {0o644, 0, 0}, "etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
				"home/nonroot/": {0o700, 65532, 65532}, "tmp/": {0o1777, 0, 0}, "etc/": {0o755, 0, 0},
			}
			for name, w := range wantMeta {
				f := files[name]
				if got := (meta{f.hdr.Mode, f.hdr.Uid, f.hdr.Gid}); got != w {
					t.Errorf("%s: mode %o uid %d gid %d, want mode %o uid %d gid %d", name, got.Mode, got.UID, got.GID, w.Mode, w.UID, w.GID)
				}
			}
			for name, f := range files {
				if !f.hdr.ModTime.Equal(testOptions.Created) || f.hdr.Uname != "" || !f.hdr.AccessTime.IsZero() {
					t.Errorf("%s: mtime %s uname %q atime %s; want the commit time, no names, no atime", name, f.hdr.ModTime, f.hdr.Uname, f.hdr.AccessTime)
				}
			}
			if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", files["etc/passwd"].data)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(files["etc/ssl/certs/ca-certificates.crt"].data) {
				t.Errorf("the CA bundle holds no certificate")
			}
			_, n, _ := CACertificates()
			if n < 100 {
				t.Errorf("the CA bundle holds %d certificates; Mozilla's store has about 150", n)
			}
			checkStaticELF(t, files["scaleplane"].data, m.Platform.Architecture)
		})
	}
}

// TestLayersSorted: tar entries are in path order, each parent
// before its children, the reproducibility rule tar does not enforce.
func TestLayersSorted(t *testing.T) {
	img, err := PlatformImage(testIndex(t), "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, strings.TrimSuffix(h.Name, "/"))
		}
		rc.Close()
		if !sort.StringsAreSorted(names) {
			t.Errorf("layer %d entries are not sorted: %v", i, names)
		}
	}
}

// TestVersionInImage runs `scaleplane version` from the image
// built for this machine: the stamps the release passes reach the binary.
func TestVersionInImage(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("the image's binaries do not run on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	img, err := PlatformImage(testIndex(t), "linux", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "scaleplane")
	if err := os.WriteFile(bin, layerFiles(t, img)["scaleplane"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("scaleplane version: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	want := map[string]any{"version": testOptions.Version, "commit": testOptions.Commit, "goVersion": runtime.Version(), "platform": "linux/" + runtime.GOARCH}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scaleplane version in the image (-want +got):\n%s", diff)
	}
}

// TestDockerfileEquivalent keeps the Dockerfile, for users who
// build with an engine, equal to this package's image where it can be
// compared: the base (distroless static, nonroot), the entrypoint, the
// user, the label keys, and the go build flags and environment.
func TestDockerfileEquivalent(t *testing.T) {
	f, err := os.Open(filepath.Join(testOptions.RepoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		froms, users, entrypoints, labelKeys []string
		runs                                 []string
	)
	sc := bufio.NewScanner(f)
	var line string
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
			continue
		}
		if strings.HasSuffix(text, "\\") {
			line += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		line += text
		instr, rest, _ := strings.Cut(line, " ")
		line = ""
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			froms = append(froms, strings.Fields(rest)[0])
		case "USER":
			users = append(users, rest)
		case "ENTRYPOINT":
			entrypoints = append(entrypoints, rest)
		case "LABEL":
			for _, kv := range quotedFields(rest) {
				k, _, _ := strings.Cut(kv, "=")
				labelKeys = append(labelKeys, k)
			}
		case "RUN":
			runs = append(runs, rest)
		}
	}
	if len(froms) == 0 || froms[len(froms)-1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("final stage FROM %v, want gcr.io/distroless/static-debian12:nonroot (what this package's base layer stands for)", froms)
	}
	if diff := cmp.Diff([]string{User}, users); diff != "" {
		t.Errorf("Dockerfile USER (-image +Dockerfile):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`["` + Entrypoint + `"]`}, entrypoints); diff != "" {
		t.Errorf("Dockerfile ENTRYPOINT (-image +Dockerfile):\n%s", diff)
	}
	var wantKeys []string
	for k := range testOptions.Labels() {
		wantKeys = append(wantKeys, k)
	}
	sort.Strings(wantKeys)
	sort.Strings(labelKeys)
	if diff := cmp.Diff(wantKeys, labelKeys); diff != "" {
		t.Errorf("Dockerfile LABEL keys (-image +Dockerfile):\n%s", diff)
	}
	var build string
	for _, r := range runs {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-buildvcs=false", "-tags nodev", `-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}`, Package} {
		if !strings.Contains(build, want) {
			t.Errorf("Dockerfile go build %q lacks %q (image.GoBuildFlags)", build, want)
		}
	}
}

func TestWriteLayoutKeepsForeignFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteLayout(dir, nil, "v0")
	if err == nil || !strings.Contains(err.Error(), "is not an OCI image layout") {
		t.Fatalf("WriteLayout over a folder of other files: %v, want a refusal", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's file is gone: %v", err)
	}
}

// quotedFields splits s at spaces outside double quotes, as Dockerfile
// LABEL arguments are written.
func quotedFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

type tarFile struct {
	hdr  *tar.Header
	data []byte
}

// layerFiles reads every layer of img, keyed by entry name.
func layerFiles(t *testing.T, img v1.Image) map[string]tarFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]tarFile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = tarFile{h, data}
		}
		rc.Close()
	}
	return files
}

// checkStaticELF: the binary is for arch and has no interpreter and no
// shared libraries, so it runs on an image without a libc.
func checkStaticELF(t *testing.T, data []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("binary machine %s, want %s", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("binary has an interpreter: it is not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
}
