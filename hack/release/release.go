package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/scaleplane/scaleplane/hack/release/attest"
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
	signKey := fs.String("sign-key", "", "PKCS#8 PEM private key (ECDSA P-256 or Ed25519) to sign every artifact with (<artifact>.sig, and the public key as signing-key.pub); empty: unsigned")
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
	attestations, err := writeAttestations(idx, *repo, digest.String(), src, *dist)
	if err != nil {
		return err
	}
	artifacts := append([]string{install, chart}, attestations...)
	if *signKey != "" {
		if err := signAll(*signKey, *dist, artifacts); err != nil {
			return err
		}
	}
	for _, a := range artifacts {
		fmt.Println(a)
	}
	fmt.Printf("image %s@%s\n", *repo, digest)
	return nil
}

// writeAttestations writes the SBOM of the linux/amd64 binary (the arm64
// one is built from the same modules) and the image's provenance, and the
// image reference with its digest (image.txt, so that the digest can be
// signed like any artifact).
func writeAttestations(idx v1.ImageIndex, repo, digest string, src source.Source, dist string) ([]string, error) {
	img, err := image.PlatformImage(idx, "linux", "amd64")
	if err != nil {
		return nil, err
	}
	bi, err := attest.BinaryBuildInfo(img, image.Entrypoint)
	if err != nil {
		return nil, fmt.Errorf("read the image's binary: %w", err)
	}
	sbom, err := attest.SBOM(bi, "scaleplane", src.Version, src.Created)
	if err != nil {
		return nil, err
	}
	prov, err := attest.Provenance([]attest.Subject{{Name: repo, Digest: digest}}, attest.BuildFacts{
		Version: src.Version, Commit: src.Commit, Repository: "https://github.com/scaleplane/scaleplane", GoVersion: bi.GoVersion, Created: src.Created,
	})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"scaleplane-" + src.Version + ".spdx.json":   sbom,
		"scaleplane-" + src.Version + ".intoto.json": prov,
		"image.txt": []byte(repo + "@" + digest + "\n"),
	}
	var out []string
	for _, name := range []string{"scaleplane-" + src.Version + ".spdx.json", "scaleplane-" + src.Version + ".intoto.json", "image.txt"} {
		p := filepath.Join(dist, name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// signAll writes <artifact>.sig (base64) for each artifact, and the public
// key beside them as signing-key.pub.
func signAll(keyPath, dist string, artifacts []string) error {
	key, err := attest.LoadSigningKey(keyPath)
	if err != nil {
		return err
	}
	for _, a := range artifacts {
		data, err := os.ReadFile(a)
		if err != nil {
			return err
		}
		sig, err := attest.Sign(key, data)
		if err != nil {
			return fmt.Errorf("sign %s: %w", a, err)
		}
		if err := os.WriteFile(a+".sig", []byte(base64.StdEncoding.EncodeToString(sig)+"\n"), 0o644); err != nil {
			return err
		}
	}
	pub, err := attest.PublicKeyPEM(key)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dist, "signing-key.pub"), pub, 0o644)
}

// verifyMain checks every <artifact>.sig in a dist folder against a public
// key: `release verify -key signing-key.pub -dist dist`.
func verifyMain(args []string) error {
	fs := flag.NewFlagSet("release verify", flag.ContinueOnError)
	keyPath := fs.String("key", "", "PEM public key the release was signed with (required)")
	dist := fs.String("dist", "dist", "folder of the artifacts and their .sig files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pub, err := os.ReadFile(*keyPath)
	if err != nil {
		return err
	}
	sigs, err := filepath.Glob(filepath.Join(*dist, "*.sig"))
	if err != nil {
		return err
	}
	if len(sigs) == 0 {
		return fmt.Errorf("no .sig file in %s: was the release signed (make release SIGN_KEY=...)?", *dist)
	}
	for _, sigPath := range sigs {
		artifact := strings.TrimSuffix(sigPath, ".sig")
		data, err := os.ReadFile(artifact)
		if err != nil {
			return err
		}
		enc, err := os.ReadFile(sigPath)
		if err != nil {
			return err
		}
		sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(enc)))
		if err != nil {
			return fmt.Errorf("%s: %w", sigPath, err)
		}
		if err := attest.Verify(pub, data, sig); err != nil {
			return fmt.Errorf("%s: %w", artifact, err)
		}
		fmt.Printf("verified %s\n", artifact)
	}
	return nil
}
