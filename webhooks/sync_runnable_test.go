package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scaleplane/scaleplane/profile"
)

func TestConfigurationSync(t *testing.T) {
	views := testViews(t)
	all := []*profile.Compiled{views[function], views[workerGroup]}

	t.Run("brings the configurations in line", func(t *testing.T) {
		haveM, haveV := Configurations(all[:1], ConfigurationOptions{}, urlConfig)
		c := fakeClient(t, haveM, haveV)
		s := &ConfigurationSync{Client: c, Views: all}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: haveM.Name}, got); err != nil {
			t.Fatal(err)
		}
		if len(got.Webhooks) != 2 {
			t.Errorf("%d mutating entries, want 2", len(got.Webhooks))
		}
		if s.NeedLeaderElection() {
			t.Error("every replica must sync, not only the leader")
		}
	})
	t.Run("gives up with the last error after its timeout", func(t *testing.T) {
		s := &ConfigurationSync{Client: fakeClient(t), Views: all, Timeout: 300 * time.Millisecond}
		err := s.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "after 300ms") {
			t.Errorf("error %v, want the last not-found error after the timeout", err)
		}
	})
	t.Run("a stopping manager is not an error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := &ConfigurationSync{Client: fakeClient(t), Views: all}
		if err := s.Start(ctx); err != nil {
			t.Errorf("error %v on a cancelled context", err)
		}
	})
}
