// Command release builds what scaleplane ships, without a container engine
// or a Helm binary:
//
//	release image   [-root DIR] [-out bin/image]        OCI image layout, linux/amd64 and linux/arm64
//	release push    -image REGISTRY/REPO [-layout bin/image]  push the layout's index (tag = version)
//	release release [-root DIR] [-layout bin/image] [-image REPO] [-dist dist]
//	                                                     dist/install.yaml pinned by digest, dist/scaleplane-<version>.tgz
//
// It lives in its own Go module (hack/release) so that go-containerregistry
// and Helm stay out of the product's go.mod. The Makefile's image, push and
// release targets call it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/scaleplane/scaleplane/hack/release/image"
	"github.com/scaleplane/scaleplane/hack/release/source"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "image":
		err = imageMain(ctx, os.Args[2:])
	case "push":
		err = pushMain(ctx, os.Args[2:])
	case "release":
		err = releaseMain(ctx, os.Args[2:])
	case "verify":
		err = verifyMain(os.Args[2:])
	default:
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: release image|push|release|verify [flags]   (run with -h for a command's flags)
`)
}

// defaultRoot is the repository root seen from this module's directory,
// where `go run .` runs.
func defaultRoot() string {
	if wd, err := os.Getwd(); err == nil && filepath.Base(wd) == "release" {
		return filepath.Clean(filepath.Join(wd, "..", ".."))
	}
	return "."
}

func imageMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release image", flag.ContinueOnError)
	root := fs.String("root", defaultRoot(), "repository root")
	out := fs.String("out", "", "OCI layout to write; default <root>/bin/image")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*root, "bin", "image")
	}
	var ps []v1.Platform
	for _, p := range strings.Split(*platforms, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || osName != "linux" || arch == "" {
			return fmt.Errorf("-platforms %q: write each platform as linux/<arch>, e.g. linux/amd64,linux/arm64", *platforms)
		}
		ps = append(ps, v1.Platform{OS: osName, Architecture: arch})
	}
	src, err := source.FromGit(ctx, *root, os.Getenv)
	if err != nil {
		return err
	}
	if src.Dirty {
		fmt.Fprintf(os.Stderr, "warning: the working tree has uncommitted changes; the image is labelled %s but is not exactly that commit\n", src.Commit)
	}
	start := time.Now()
	idx, err := image.Build(ctx, image.Options{
		RepoRoot: *root, Version: src.Version, Commit: src.Commit, Created: src.Created,
		Platforms: ps, Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	if err := image.WriteLayout(*out, idx, src.Version); err != nil {
		return err
	}
	sum, err := image.Summarize(idx)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "==> wrote %s in %s\n", *out, time.Since(start).Round(time.Second))
	fmt.Printf("%s %s\n%s", *out, src.Version, sum)
	return nil
}

func pushMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release push", flag.ContinueOnError)
	layoutDir := fs.String("layout", filepath.Join(defaultRoot(), "bin", "image"), "OCI layout written by `release image`")
	repo := fs.String("image", "", "registry/repository to push to, e.g. ghcr.io/you/scaleplane (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *repo == "" {
		return errors.New("-image is required (make push IMAGE=registry/repo)")
	}
	idx, ann, err := image.ReadLayout(*layoutDir)
	if err != nil {
		return err
	}
	tag := ann[image.LabelRefName]
	if tag == "" {
		return fmt.Errorf("%s names no version (%s); rebuild it with make image", *layoutDir, image.LabelRefName)
	}
	ref, err := name.NewTag(*repo + ":" + tag)
	if err != nil {
		return fmt.Errorf("-image %q: %w", *repo, err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Context(), d)
	return nil
}
