package attest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// buildInfo is what `go version -m` prints of a release binary, shortened.
const buildInfo = "go\tgo1.26.8\n" +
	"path\tgithub.com/scaleplane/scaleplane/cmd/scaleplane\n" +
	"mod\tgithub.com/scaleplane/scaleplane/cmd/scaleplane\t(devel)\t\n" +
	"dep\tgithub.com/google/go-containerregistry\tv0.22.1\th1:47DAoSdbHxW5nP3oqfiTq1HkVMJ6pLfTuaVXZjyf5BE=\n" +
	"dep\tk8s.io/api\tv0.37.1\th1:Y0eIivqvK5t3Tu0nK7OVpN5yM9HX9HlA+dL+NO8Ewf4=\n" +
	"dep\texample.com/forked\tv1.0.0\th1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n" +
	"=>\texample.com/fork\tv1.0.1\th1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=\n" +
	"dep\tgithub.com/scaleplane/scaleplane/promql\tv0.0.0\t\n" +
	"=>\t../../promql\t(devel)\t\n" +
	"build\tCGO_ENABLED=0\n"

// TestSBOMListsEveryLinkedModule: the SBOM of a binary describes the main
// module and has one package per module the binary links, with a purl and
// the go.sum hash as a SHA256 checksum; a replaced module is listed as its
// replacement, and a module replaced by a folder of the checkout (the
// other scaleplane modules) under its own path at the release's version.
func TestSBOMListsEveryLinkedModule(t *testing.T) {
	bi, err := debug.ParseBuildInfo(buildInfo)
	if err != nil {
		t.Fatal(err)
	}
	data, err := SBOM(bi, "scaleplane", "v1.2.3", time.Unix(1_700_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name      string `json:"name"`
			Version   string `json:"versionInfo"`
			Checksums []struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"checksumValue"`
			} `json:"checksums"`
			ExternalRefs []struct {
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
		Relationships []struct {
			Type string `json:"relationshipType"`
		} `json:"relationships"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q", doc.SPDXVersion)
	}
	if got, want := len(doc.Packages), len(bi.Deps)+1; got != want {
		t.Errorf("%d packages, want the main module and %d dependencies", got, len(bi.Deps))
	}
	if len(doc.Relationships) != len(bi.Deps)+1 {
		t.Errorf("%d relationships, want DESCRIBES and one DEPENDS_ON per dependency", len(doc.Relationships))
	}
	found := false
	for _, p := range doc.Packages {
		if p.Name == "github.com/google/go-containerregistry" {
			found = true
			if len(p.Checksums) != 1 || len(p.Checksums[0].Value) != 64 || !strings.HasPrefix(p.ExternalRefs[0].Locator, "pkg:golang/github.com/google/go-containerregistry@v") {
				t.Errorf("go-containerregistry package %+v: want a SHA256 module hash and a purl", p)
			}
		}
	}
	if !found {
		t.Errorf("the SBOM lacks go-containerregistry, which the binary links")
	}
	if !strings.Contains(string(data), `"pkg:golang/example.com/fork@v1.0.1"`) || strings.Contains(string(data), `"example.com/forked"`) {
		t.Errorf("a replaced module should be listed as its replacement:\n%s", data)
	}
	if !strings.Contains(string(data), `"pkg:golang/github.com/scaleplane/scaleplane/promql@v1.2.3"`) || strings.Contains(string(data), `"../../promql"`) {
		t.Errorf("a module replaced by a folder should be listed under its path at the release's version:\n%s", data)
	}
}

// TestProvenanceNamesTheImageAndCommit: the statement's subject is the
// image by digest, and it records the commit and Go version; a digest that
// is not sha256 is refused.
func TestProvenanceNamesTheImageAndCommit(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	data, err := Provenance([]Subject{{Name: "ghcr.io/scaleplane/scaleplane", Digest: digest}}, BuildFacts{
		Version: "v1.2.3", Commit: strings.Repeat("c", 40), Repository: "https://github.com/scaleplane/scaleplane", GoVersion: "go1.26.8", Created: time.Unix(1_700_000_000, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"https://in-toto.io/Statement/v1"`, `"https://slsa.dev/provenance/v1"`, `"sha256": "` + strings.Repeat("ab", 32), `"gitCommit": "` + strings.Repeat("c", 40), `"goVersion": "go1.26.8"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("provenance lacks %s:\n%s", want, data)
		}
	}
	if _, err := Provenance([]Subject{{Name: "x", Digest: "md5:00"}}, BuildFacts{}); err == nil {
		t.Error("a non-sha256 digest was accepted")
	}
}

// TestSignVerify: what Sign makes, Verify accepts with the public key, for
// both key types; a changed artifact or another key is refused; and
// openssl, given the same public key, agrees.
func TestSignVerify(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherPub, _ := PublicKeyPEM(other)
	for name, key := range map[string]any{"ecdsa": ec, "ed25519": ed} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			keyPath := filepath.Join(dir, "key.pem")
			if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
				t.Fatal(err)
			}
			signer, err := LoadSigningKey(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			artifact := []byte("apiVersion: v1\nkind: List\n")
			sig, err := Sign(signer, artifact)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := PublicKeyPEM(signer)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(pub, artifact, sig); err != nil {
				t.Errorf("own signature refused: %v", err)
			}
			if err := Verify(pub, append(artifact, '#'), sig); err == nil {
				t.Error("a changed artifact verified")
			}
			if err := Verify(otherPub, artifact, sig); err == nil {
				t.Error("another key verified the signature")
			}
			openssl, err := exec.LookPath("openssl")
			if err != nil {
				t.Logf("no openssl here: the cross-check with it is left out")
				return
			}
			for f, data := range map[string][]byte{"artifact": artifact, "sig": sig, "pub.pem": pub} {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig", "artifact"}
			if name == "ed25519" {
				args = []string{"pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "artifact", "-sigfile", "sig"}
			}
			cmd := exec.Command(openssl, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// TestLoadSigningKeyRefusesOtherKeys: an RSA key, or a file that is no
// PKCS#8 key, is refused saying what to use.
func TestLoadSigningKeyRefusesOtherKeys(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(p, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(p); err == nil || !strings.Contains(err.Error(), "PKCS#8") {
		t.Errorf("not a key: %v, want an error naming PKCS#8", err)
	}
	k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(p); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Errorf("P-384 key: %v, want an error naming P-256", err)
	}
}
