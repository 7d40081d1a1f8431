package certs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		name        string
		files       map[string][]byte
		wantChanged bool
	}{
		{name: "first write", files: map[string][]byte{"tls.crt": []byte("c1"), "tls.key": []byte("k1")}, wantChanged: true},
		{name: "same content is not rewritten", files: map[string][]byte{"tls.crt": []byte("c1"), "tls.key": []byte("k1")}},
		{name: "new pair", files: map[string][]byte{"tls.crt": []byte("c2"), "tls.key": []byte("k2")}, wantChanged: true},
	}
	for _, s := range steps {
		changed, err := writeDir(dir, s.files)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.wantChanged, changed); diff != "" {
			t.Errorf("%s: changed (-want +got):\n%s", s.name, diff)
		}
		got := map[string][]byte{}
		for name := range s.files {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			got[name] = b
		}
		if diff := cmp.Diff(s.files, got); diff != "" {
			t.Errorf("%s: files (-want +got):\n%s", s.name, diff)
		}
	}
	// One generation directory remains: old ones are removed after the swap.
	gens, err := filepath.Glob(filepath.Join(dir, "..gen-*"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(1, len(gens)); diff != "" {
		t.Errorf("generation dirs %v (-want +got):\n%s", gens, diff)
	}
}

// TestWriteDirReloadsCertWatcher checks the contract with controller-runtime:
// the certwatcher the webhook server uses picks up a pair written by writeDir.
func TestWriteDirReloadsCertWatcher(t *testing.T) {
	o := planOptions()
	dir := t.TempDir()
	first := generated(t, time.Now(), o)
	if _, err := writeDir(dir, map[string][]byte{CertKey: first.serving.certPEM, KeyKey: first.serving.keyPEM}); err != nil {
		t.Fatal(err)
	}
	cw, err := certwatcher.New(filepath.Join(dir, CertKey), filepath.Join(dir, KeyKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cw.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("certificate watcher stopped with: %v", err)
		}
	})

	second := mustApply(t, time.Now(), stepIssue, first, o)
	if _, err := writeDir(dir, map[string][]byte{CertKey: second.serving.certPEM, KeyKey: second.serving.keyPEM}); err != nil {
		t.Fatal(err)
	}
	// The watcher's 10s poll would also find it; the inotify event on the
	// removed generation should be much sooner, but only correctness is
	// asserted here, within the poll's bound.
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		c, _ := cw.GetCertificate(nil)
		return c != nil && bytes.Equal(c.Certificate[0], second.serving.cert.Raw), nil
	})
	if err != nil {
		t.Fatalf("certwatcher did not load the new certificate: %v", err)
	}
}
