package certmanager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

// TestREADMEDeploySectionIsTheTestedOne keeps README.md's "Deploy with
// cert-manager" section identical to docs/certs.md's, whose commands
// TestDeployWithCertManager runs against a real cluster.
func TestREADMEDeploySectionIsTheTestedOne(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	docs := read("docs/certs.md")
	docsSection := strings.TrimSpace(docs[strings.Index(docs, "## Deploy with cert-manager")+len("## Deploy with cert-manager"):])
	readme := read("README.md")
	start := strings.Index(readme, "### Deploy with cert-manager")
	end := strings.Index(readme, "## Documentation")
	if start < 0 || end < start {
		t.Fatal(`README.md has no "### Deploy with cert-manager" section before "## Documentation"`)
	}
	readmeSection := strings.TrimSpace(readme[start+len("### Deploy with cert-manager") : end])
	if diff := cmp.Diff(docsSection, readmeSection); diff != "" {
		t.Errorf("README's Deploy with cert-manager section differs from docs/certs.md's (-docs +README); copy the docs section:\n%s", diff)
	}
}
