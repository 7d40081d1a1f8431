// Package image builds scaleplane's container image without a container
// engine: a static Go binary and the few files a distroless "static nonroot"
// base holds (CA certificates, an /etc/passwd with user 65532, /tmp, the
// user's home), written as reproducible layers with go-containerregistry
// into a multi-platform OCI image index.
//
// Reproducible means the same commit, built with the same Go toolchain,
// gives the same index digest on any machine: every timestamp is the
// commit's time (SOURCE_DATE_EPOCH), tar entries are sorted with fixed
// owners and modes, the binary is built with -trimpath and without VCS
// stamping, and the CA bundle comes from a Go module pinned in go.sum
// rather than from the build machine.
//
// The package must not push anything; cmd push does that from a layout.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// What the image is, shared with the Dockerfile (a test keeps them equal).
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/scaleplane"
	// User is the image's user: distroless' "nonroot", numeric so that a
	// pod's runAsNonRoot can verify it.
	User = "65532:65532"
	// UID and GID of User.
	UID, GID = 65532, 65532
	// CABundle is where the CA certificates are, as in Debian and
	// distroless; Go reads it without SSL_CERT_FILE, which is set anyway.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Home is the user's home directory and the working directory.
	Home = "/home/nonroot"
	// DefaultSource is the org.opencontainers.image.source label.
	DefaultSource = "https://github.com/scaleplane/scaleplane"
	// Package is the main package built into the image. It is the folder
	// of module cmd/scaleplane, so go build runs in it (-C, the first flag):
	// that module's go.mod requires the others.
	Package = "./cmd/scaleplane"
)

// OCI annotation keys used as labels and index annotations.
const (
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelSource      = "org.opencontainers.image.source"
	LabelCreated     = "org.opencontainers.image.created"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelRefName     = "org.opencontainers.image.ref.name"
)

// DefaultPlatforms are the platforms `make image` builds.
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// Options says what to build. RepoRoot, Version, Commit and Created are
// required; Source and Platforms have defaults.
type Options struct {
	// RepoRoot is the scaleplane module's directory.
	RepoRoot string
	// Version and Commit are stamped into the binary (`scaleplane version`)
	// and the labels.
	Version, Commit string
	// Created is every timestamp in the image: the commit's time.
	Created time.Time
	// Source is the repository URL label. Default DefaultSource.
	Source string
	// Platforms to build. Default DefaultPlatforms.
	Platforms []v1.Platform
	// WorkDir holds the built binaries. Default a temporary directory,
	// removed afterwards.
	WorkDir string
	// Log receives progress lines. Default: discarded.
	Log io.Writer
}

func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.RepoRoot == "" {
		errs = append(errs, errors.New("RepoRoot is required"))
	}
	if o.Version == "" || o.Commit == "" {
		errs = append(errs, errors.New("Version and Commit are required"))
	}
	if o.Created.IsZero() {
		errs = append(errs, errors.New("Created is required (the commit time, SOURCE_DATE_EPOCH)"))
	}
	if o.Source == "" {
		o.Source = DefaultSource
	}
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Created = o.Created.UTC()
	return o, errors.Join(errs...)
}

// Labels are the image's labels, also the index's annotations.
func (o Options) Labels() map[string]string {
	return map[string]string{
		LabelVersion:     o.Version,
		LabelRevision:    o.Commit,
		LabelSource:      o.Source,
		LabelCreated:     o.Created.UTC().Format(time.RFC3339),
		LabelTitle:       "scaleplane",
		LabelDescription: "Admission webhooks, controllers and a trigger autoscaler that make workload custom resources scalable.",
		LabelLicenses:    "Apache-2.0",
	}
}

// Build compiles the binary for every platform and assembles the image
// index. Nothing is written outside WorkDir.
func Build(ctx context.Context, opts Options) (v1.ImageIndex, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("image options: %w", err)
	}
	work := opts.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "scaleplane-image-"); err != nil {
			return nil, fmt.Errorf("create work dir: %w", err)
		}
		defer os.RemoveAll(work)
	}
	base, err := BaseLayer(opts.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range opts.Platforms {
		bin := filepath.Join(work, fmt.Sprintf("scaleplane-%s-%s", p.OS, p.Architecture))
		fmt.Fprintf(opts.Log, "==> go build %s for %s/%s\n", Package, p.OS, p.Architecture)
		if err := BuildBinary(ctx, opts.RepoRoot, bin, p, opts.Version, opts.Commit); err != nil {
			return nil, err
		}
		img, err := platformImage(opts, p, base, bin)
		if err != nil {
			return nil, fmt.Errorf("image for %s/%s: %w", p.OS, p.Architecture, err)
		}
		platform := p
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, opts.Labels()).(v1.ImageIndex), nil
}

// GoBuildFlags are the flags of every release build of the binary; the
// Dockerfile passes the same (a test checks it).
func GoBuildFlags(version, commit string) []string {
	return []string{
		"-trimpath",
		// VCS stamping would record whether the tree is dirty and when,
		// which the release stamps below already say.
		"-buildvcs=false",
		// Without `scaleplane dev`, whose embedded control plane (envtest)
		// cannot even initialise on a read-only root file system.
		"-tags", "nodev",
		"-ldflags", fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", version, commit),
	}
}

// BuildBinary builds the static scaleplane binary for p into out.
func BuildBinary(ctx context.Context, repoRoot, out string, p v1.Platform, version, commit string) error {
	// -C makes a relative -o relative to Package.
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-C", Package, "-o", out}, GoBuildFlags(version, commit)...)
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		// The machine's GOFLAGS (or a go.work above the module) must not
		// change what is built; the
		// instruction-set levels are pinned to Go's defaults for the same
		// reason.
		"GOFLAGS=", "GOWORK=off", "GOAMD64=v1", "GOARM64=v8.0",
	)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s/%s: %w\n%s", Package, p.OS, p.Architecture, err, stderr.String())
	}
	return nil
}

func platformImage(opts Options, p v1.Platform, base v1.Layer, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	binLayer, err := Layer([]File{{Path: Entrypoint, Mode: 0o755, Data: data}}, opts.Created)
	if err != nil {
		return nil, err
	}
	history := func(by string) v1.History {
		return v1.History{Created: v1.Time{Time: opts.Created}, CreatedBy: by, Comment: "hack/release/image"}
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: history("base: CA certificates, /etc/passwd (nonroot 65532), /tmp, " + Home)},
		mutate.Addendum{Layer: binLayer, History: history("scaleplane " + opts.Version + " (" + Package + ", CGO_ENABLED=0)")},
	)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = Config(opts.Labels())
	return mutate.ConfigFile(img, cf)
}

// Config is the image's runtime configuration.
func Config(labels map[string]string) v1.Config {
	return v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User,
		WorkingDir: Home,
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=" + CABundle,
		},
		Labels: labels,
	}
}

// File is one entry of a layer. A zero Mode with Dir false means 0644.
type File struct {
	Path     string
	Mode     fs.FileMode
	UID, GID int
	Dir      bool
	Data     []byte
}

// Layer writes files into a reproducible tar layer: entries sorted by
// path, every parent directory present, mtime fixed, no user or group
// names, no access or change times.
func Layer(files []File, mtime time.Time) (v1.Layer, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = File{Path: dir, Dir: true, Mode: 0o755}
			}
		}
		f.Path = p
		entries[p] = f
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		f := entries[name]
		h := &tar.Header{
			Name:    name,
			Mode:    tarMode(f.Mode),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime.UTC(),
			Format:  tar.FormatPAX,
		}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
			if f.Mode == 0 {
				h.Mode = 0o755
			}
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
			if f.Mode == 0 {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// tarMode is mode's permission and special bits as tar (and chmod) write
// them.
func tarMode(mode fs.FileMode) int64 {
	m := int64(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// Passwd and Group are distroless' (static-debian12): root, nobody and
// nonroot, none with a login shell (there is no shell).
const (
	Passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	Group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"tty:x:5:\n" +
		"staff:x:50:\n" +
		"nonroot:x:65532:\n"
	// NSSwitch makes Go's resolver read /etc/hosts before DNS, as glibc
	// would.
	NSSwitch = "hosts: files dns\n"
)

// BaseFiles are the files every platform's image shares: what scaleplane
// needs of distroless/static:nonroot.
func BaseFiles() ([]File, error) {
	ca, n, err := CACertificates()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the CA bundle module holds no certificates")
	}
	return []File{
		{Path: "/etc/passwd", Data: []byte(Passwd)},
		{Path: "/etc/group", Data: []byte(Group)},
		{Path: "/etc/nsswitch.conf", Data: []byte(NSSwitch)},
		{Path: CABundle, Data: ca},
		{Path: Home, Dir: true, Mode: 0o700, UID: UID, GID: GID},
		// The root file system is read-only in the Deployment; /tmp
		// exists so that the cert dir's emptyDir has a parent, as in
		// distroless.
		{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
	}, nil
}

// BaseLayer is the layer of BaseFiles.
func BaseLayer(mtime time.Time) (v1.Layer, error) {
	files, err := BaseFiles()
	if err != nil {
		return nil, err
	}
	return Layer(files, mtime)
}

// CACertificates returns the Mozilla root store as PEM, from
// golang.org/x/crypto/x509roots/fallback at the version go.sum pins, and
// how many certificates it holds. Roots that carry a constraint (a
// distrust date Mozilla set) are left out: a PEM file cannot express the
// constraint, and trusting them without it would trust more than Mozilla
// does.
func CACertificates() ([]byte, int, error) {
	var buf bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(r.Certificate); err != nil {
			return nil, 0, fmt.Errorf("parse a root of the CA bundle module: %w", err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, 0, err
		}
		n++
	}
	return buf.Bytes(), n, nil
}

// WriteLayout writes idx as an OCI image layout at dir: index.json at its
// root naming the image index (annotated with refName), blobs by digest.
// An existing layout at dir is replaced; anything else there is an error,
// so a user's files are never removed.
func WriteLayout(dir string, idx v1.ImageIndex, refName string) error {
	if err := removeOldLayout(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+"-")
	if err != nil {
		return fmt.Errorf("create a temporary layout: %w", err)
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{LabelRefName: refName})); err != nil {
		return fmt.Errorf("write image index: %w", err)
	}
	// Permissions of a fresh MkdirTemp are 0700; a layout is shared.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the layout into place: %w", err)
	}
	return nil
}

func removeOldLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(entries) == 0:
		return os.Remove(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is not an OCI image layout (no oci-layout file); move it away or choose another output", dir)
	}
	return os.RemoveAll(dir)
}

// ReadLayout returns the image index a layout written by WriteLayout
// names, and its annotations.
func ReadLayout(dir string) (v1.ImageIndex, map[string]string, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read OCI layout %s: %w", dir, err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, nil, fmt.Errorf("read %s/index.json: %w", dir, err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex {
		return nil, nil, fmt.Errorf("%s/index.json should name exactly one image index (run make image); it names %d manifests", dir, len(im.Manifests))
	}
	idx, err := root.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		return nil, nil, fmt.Errorf("read image index %s: %w", im.Manifests[0].Digest, err)
	}
	return idx, im.Manifests[0].Annotations, nil
}

// PlatformImage returns idx's image for os/arch.
func PlatformImage(idx v1.ImageIndex, os, arch string) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == os && d.Platform.Architecture == arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the image index has no %s/%s image", os, arch)
}
