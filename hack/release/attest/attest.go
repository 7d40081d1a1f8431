// Package attest writes what lets a platform team check a release without
// rebuilding it: an SPDX 2.3 SBOM read from the released binary's own build
// information (every module linked, at the version and hash the build
// used), an in-toto statement of SLSA build provenance for the image, and
// detached signatures of every artifact with a key the team supplies
// (ECDSA P-256 or Ed25519, PKCS#8 PEM), checkable with openssl alone. It
// reaches no network and adds no dependency: the standard library does it.
package attest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// SBOM is the SPDX 2.3 JSON document of a Go binary's build information:
// the main module and every dependency module linked into it, each with
// its version, its module hash (Go's h1: sum) and a purl, and a DEPENDS_ON
// relationship from the main module to each.
func SBOM(bi *debug.BuildInfo, name, version string, created time.Time) ([]byte, error) {
	if bi == nil {
		return nil, errors.New("no build information: the binary was built without module support")
	}
	type checksum struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	type ref struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type pkg struct {
		Name             string     `json:"name"`
		SPDXID           string     `json:"SPDXID"`
		Version          string     `json:"versionInfo,omitempty"`
		DownloadLocation string     `json:"downloadLocation"`
		FilesAnalyzed    bool       `json:"filesAnalyzed"`
		Checksums        []checksum `json:"checksums,omitempty"`
		ExternalRefs     []ref      `json:"externalRefs,omitempty"`
		Comment          string     `json:"comment,omitempty"`
	}
	type rel struct {
		From string `json:"spdxElementId"`
		Type string `json:"relationshipType"`
		To   string `json:"relatedSpdxElement"`
	}
	id := func(path string) string {
		r := strings.NewReplacer("/", "-", ".", "-", "_", "-", "~", "-", "+", "-")
		return "SPDXRef-Package-" + r.Replace(path)
	}
	purl := func(path, v string) ref {
		return ref{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + path + "@" + v}
	}
	mod := func(m *debug.Module) pkg {
		if m.Replace != nil && (m.Replace.Version == "" || m.Replace.Version == "(devel)") {
			// A folder of the checkout (the binary's module replaces the
			// other scaleplane modules so): built at the release's version.
			return pkg{Name: m.Path, SPDXID: id(m.Path), Version: version, DownloadLocation: "NOASSERTION",
				ExternalRefs: []ref{purl(m.Path, version)}, Comment: "built from the release's checkout (" + m.Replace.Path + ")"}
		}
		if m.Replace != nil {
			m = m.Replace
		}
		p := pkg{Name: m.Path, SPDXID: id(m.Path), Version: m.Version, DownloadLocation: "NOASSERTION", ExternalRefs: []ref{purl(m.Path, m.Version)}}
		if sum, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
			if raw, err := base64.StdEncoding.DecodeString(sum); err == nil {
				// Go's module hash: the SHA-256 of the module's file
				// hashes (golang.org/x/mod/sumdb/dirhash), as go.sum has it.
				p.Checksums = []checksum{{Algorithm: "SHA256", Value: hex.EncodeToString(raw)}}
				p.Comment = "checksum is Go's module hash (go.sum h1:" + sum + ")"
			}
		}
		return p
	}
	main := pkg{Name: bi.Main.Path, SPDXID: id(bi.Main.Path), Version: version, DownloadLocation: "NOASSERTION",
		ExternalRefs: []ref{purl(bi.Main.Path, version)}, Comment: "built with " + bi.GoVersion}
	pkgs := []pkg{main}
	rels := []rel{{From: "SPDXRef-DOCUMENT", Type: "DESCRIBES", To: main.SPDXID}}
	deps := append([]*debug.Module(nil), bi.Deps...)
	sort.Slice(deps, func(i, j int) bool { return deps[i].Path < deps[j].Path })
	for _, d := range deps {
		p := mod(d)
		pkgs = append(pkgs, p)
		rels = append(rels, rel{From: main.SPDXID, Type: "DEPENDS_ON", To: p.SPDXID})
	}
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              name + "-" + version,
		"documentNamespace": "https://scaleplane.io/spdx/" + name + "-" + version,
		"creationInfo": map[string]any{
			"created":  created.UTC().Format(time.RFC3339),
			"creators": []string{"Tool: scaleplane-release"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// Subject is what a provenance statement is about.
type Subject struct {
	Name   string // e.g. ghcr.io/scaleplane/scaleplane
	Digest string // sha256:<hex>
}

// BuildFacts are the provenance's parameters.
type BuildFacts struct {
	Version, Commit, Repository, GoVersion string
	// Created is the source's time (the commit's, or SOURCE_DATE_EPOCH):
	// the statement is reproducible like the image.
	Created time.Time
}

// Provenance is an in-toto Statement v1 with a SLSA Provenance v1
// predicate for the subjects: how `make image` built them, from which
// commit, with which Go.
func Provenance(subjects []Subject, f BuildFacts) ([]byte, error) {
	type subject struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	}
	var subs []subject
	for _, s := range subjects {
		hexDigest, ok := strings.CutPrefix(s.Digest, "sha256:")
		if !ok || len(hexDigest) != 64 {
			return nil, fmt.Errorf("subject %s: digest %q is not sha256:<64 hex>", s.Name, s.Digest)
		}
		subs = append(subs, subject{Name: s.Name, Digest: map[string]string{"sha256": hexDigest}})
	}
	statement := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       subs,
		"predicateType": "https://slsa.dev/provenance/v1",
		"predicate": map[string]any{
			"buildDefinition": map[string]any{
				"buildType": "https://scaleplane.io/buildtypes/make-image/v1",
				"externalParameters": map[string]any{
					"source":  map[string]any{"uri": "git+" + f.Repository + "@" + f.Commit, "digest": map[string]string{"gitCommit": f.Commit}},
					"version": f.Version,
				},
				"internalParameters": map[string]any{"goVersion": f.GoVersion, "cgo": false, "trimpath": true},
				"resolvedDependencies": []map[string]any{
					{"uri": "git+" + f.Repository + "@" + f.Commit, "digest": map[string]string{"gitCommit": f.Commit}},
				},
			},
			"runDetails": map[string]any{
				"builder":  map[string]any{"id": "https://scaleplane.io/builders/make-release"},
				"metadata": map[string]any{"startedOn": f.Created.UTC().Format(time.RFC3339), "finishedOn": f.Created.UTC().Format(time.RFC3339)},
			},
		},
	}
	return json.MarshalIndent(statement, "", "  ")
}

// LoadSigningKey reads a PKCS#8 PEM private key: ECDSA P-256 or Ed25519.
func LoadSigningKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: want a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----), e.g. from openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%s: ECDSA key on %s; use P-256", path, k.Curve.Params().Name)
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%s: a %T key; use ECDSA P-256 or Ed25519", path, key)
}

// Sign returns the detached signature of data: ECDSA over SHA-256 (ASN.1,
// what `openssl dgst -sha256 -sign` makes) or Ed25519 over data itself.
func Sign(key crypto.Signer, data []byte) ([]byte, error) {
	switch key.(type) {
	case ed25519.PrivateKey:
		return key.Sign(rand.Reader, data, crypto.Hash(0))
	default:
		sum := sha256.Sum256(data)
		return key.Sign(rand.Reader, sum[:], crypto.SHA256)
	}
}

// Verify checks a signature Sign made, with the PEM public key (SPKI, as
// `openssl pkey -pubout` writes it).
func Verify(publicKeyPEM, data, sig []byte) error {
	block, _ := pem.Decode(publicKeyPEM)
	if block == nil || block.Type != "PUBLIC KEY" {
		return errors.New("want a PEM public key (-----BEGIN PUBLIC KEY-----)")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return err
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(data)
		if !ecdsa.VerifyASN1(k, sum[:], sig) {
			return errors.New("signature does not match")
		}
	case ed25519.PublicKey:
		if !ed25519.Verify(k, data, sig) {
			return errors.New("signature does not match")
		}
	default:
		return fmt.Errorf("a %T public key; use ECDSA P-256 or Ed25519", pub)
	}
	return nil
}

// PublicKeyPEM is key's public half as PEM (SPKI).
func PublicKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: "PUBLIC KEY", Bytes: der}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
