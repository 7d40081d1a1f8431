package certmanager

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/scaleplane/scaleplane/e2e/framework"
)

var (
	rackedClusterGVK = framework.RackedClusterGVK
	rackedCluster    = framework.RackedCluster
)

// mutated reports whether the webhook fanned replicas out to every rack,
// which the object as sent (racks 1, 2, 4 of 3 replicas) does not have.
func mutated(u *unstructured.Unstructured, replicas int64) error {
	got, err := framework.RackMembers(u)
	if err != nil {
		return err
	}
	for _, m := range got {
		if m != replicas {
			return fmt.Errorf("%s not mutated: rack members %v, want each %d", u.GetName(), got, replicas)
		}
	}
	if len(got) == 0 {
		return fmt.Errorf("%s has no racks", u.GetName())
	}
	return nil
}

func freePort(t *testing.T) int { return framework.FreePort(t) }

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM certificate in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return cert
}

// docBlock returns the body of the fenced code block between
// <!-- e2e:name --> and the next <!-- /e2e --> in docs/certs.md, with the
// list indentation removed.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	return docBlockIn(t, "certs.md", name)
}

// docBlockIn is docBlock for another file of docs/.
func docBlockIn(t *testing.T, file, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", file))
	if err != nil {
		t.Fatalf("read docs: %v", err)
	}
	open := "<!-- e2e:" + name + " -->"
	_, rest, ok := strings.Cut(string(doc), open)
	if !ok {
		t.Fatalf("docs/%s has no %s marker", file, open)
	}
	section, _, ok := strings.Cut(rest, "<!-- /e2e -->")
	if !ok {
		t.Fatalf("docs/%s: %s is not closed by <!-- /e2e -->", file, open)
	}
	var body []string
	indent, in := "", false
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if in {
				return strings.Join(body, "\n") + "\n"
			}
			in = true
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			continue
		}
		if in {
			body = append(body, strings.TrimPrefix(line, indent))
		}
	}
	t.Fatalf("docs/%s: no closed code block after %s", file, open)
	return ""
}

// commands splits a shell block into commands: one per line, backslash
// continuations joined, comments and blank lines dropped.
func commands(t *testing.T, block string) [][]string {
	t.Helper()
	var cmds [][]string
	var cur strings.Builder
	for line := range strings.SplitSeq(block, "\n") {
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cur.WriteString(line)
		words := shellWords(t, cur.String())
		cur.Reset()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds
}

// shellWords splits a line as sh would for the plain commands the docs
// use: whitespace, single and double quotes, backslash escapes outside
// single quotes, and # comments. Anything needing a shell (pipes,
// expansions, redirections) fails the test, so the docs stay runnable as
// written.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs):
				i++
				w.WriteRune(rs[i])
			case r == '$' || r == '`':
				t.Fatalf("docs command %q needs a shell (%c); keep e2e blocks plain", line, r)
			default:
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			w.WriteRune(rs[i])
			inWord = true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		case strings.ContainsRune("|&;<>$`(){}*?", r):
			t.Fatalf("docs command %q needs a shell (%c); keep e2e blocks plain", line, r)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("docs command %q has an unterminated quote", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// runDocCommands runs every command of a docs block with the real kubectl
// against the test cluster, from the repository root as the docs say.
// replace maps a documented placeholder word to its test value; skip names
// commands (as written) that already took effect on this cluster.
func runDocCommands(t *testing.T, ctx context.Context, name string, replace map[string]string, skip map[string]bool) {
	t.Helper()
	runDocCommandsIn(t, ctx, "certs.md", name, replace, skip)
}

// runDocCommandsIn is runDocCommands for a block of another file of docs/.
func runDocCommandsIn(t *testing.T, ctx context.Context, file, name string, replace map[string]string, skip map[string]bool) {
	t.Helper()
	for _, words := range commands(t, docBlockIn(t, file, name)) {
		if words[0] != "kubectl" {
			t.Fatalf("docs block %s: %q is not a kubectl command", name, strings.Join(words, " "))
		}
		if skip[strings.Join(words, " ")] {
			t.Logf("already done on this cluster: %s", strings.Join(words, " "))
			continue
		}
		args := words[1:]
		for i, a := range args {
			if v, ok := replace[a]; ok {
				args[i] = v
			}
		}
		cmd := exec.CommandContext(ctx, framework.Binary("kubectl"), args...)
		cmd.Dir = framework.RepoRoot()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("docs block %s: kubectl %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		t.Logf("kubectl %s\n%s", strings.Join(args, " "), strings.TrimSpace(out.String()))
	}
}

func hasIP(cert *x509.Certificate, ip string) bool {
	want := net.ParseIP(ip)
	for _, got := range cert.IPAddresses {
		if got.Equal(want) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decodeAll decodes a multi-document YAML stream.
func decodeAll(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode kustomize output: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
