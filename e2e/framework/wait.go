package framework

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultTimeout bounds every wait in the e2e suites; a condition that has
// not held by then is a failure, reported with the last observation.
const DefaultTimeout = 60 * time.Second

// Eventually polls cond until it reports true or the deadline passes, then
// fails the test with cond's last message. It is the only way e2e tests wait.
func Eventually(t testing.TB, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 25*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %s: %s", timeout, last)
	}
}
