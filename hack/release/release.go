package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scaleplane/scaleplane/hack/release/image"
	"github.com/scaleplane/scaleplane/hack/release/manifests"
	"github.com/scaleplane/scaleplane/hack/release/source"
)

func releaseMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release release", flag.ContinueOnError)
	root := fs.String("root", defaultRoot(), "repository root")
	layoutDir := fs.String("layout", "", "OCI layout written by `release image`; default <root>/bin/image")
	repo := fs.String("image", "ghcr.io/scaleplane/scaleplane", "image repository the manifests pull from")
	dist := fs.String("dist", "", "output folder; default <root>/dist")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *layoutDir == "" {
		*layoutDir = filepath.Join(*root, "bin", "image")
	}
	if *dist == "" {
		*dist = filepath.Join(*root, "dist")
	}
	src, err := source.FromGit(ctx, *root, os.Getenv)
	if err != nil {
		return err
	}
	idx, ann, err := image.ReadLayout(*layoutDir)
	if err != nil {
		return fmt.Errorf("%w (run make image first)", err)
	}
	// Pinning an image built from another commit would ship a manifest
	// that does not match its image.
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if got := im.Annotations[image.LabelRevision]; got != src.Commit || ann[image.LabelRefName] != src.Version {
		return fmt.Errorf("%s holds %s (commit %s), the tree is %s (commit %s): run make image again", *layoutDir, ann[image.LabelRefName], got, src.Version, src.Commit)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	install, chart, err := manifests.Release(manifests.ReleaseOptions{
		Root: *root, Dist: *dist, Repository: *repo, Digest: digest.String(),
		Version: src.Version, Commit: src.Commit, ChartVersion: src.ChartVersion(),
	})
	if err != nil {
		return err
	}
	fmt.Printf("%s\n%s\nimage %s@%s\n", install, chart, *repo, digest)
	return nil
}
