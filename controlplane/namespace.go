package controlplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// TB is the part of testing.TB that Namespace needs; this package does not
// import testing because the scaleplane binary's dev mode uses it.
type TB interface {
	Helper()
	Name() string
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Namespace creates a namespace named after the test and deletes it when
// the test ends. No namespace controller runs, so deletion only marks it;
// nothing waits for it.
func (c *Cluster) Namespace(t TB) string {
	t.Helper()
	base := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := fmt.Sprintf("%s-%05d", strings.Trim(base, "-"), rand.IntN(100000))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return name
}
