package watches

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeInformer counts the handlers added and not removed.
type fakeInformer struct {
	cache.Informer
	live map[toolscache.ResourceEventHandlerRegistration]bool
}

type fakeRegistration struct {
	toolscache.ResourceEventHandlerRegistration
}

func (f *fakeInformer) AddEventHandlerWithOptions(toolscache.ResourceEventHandler, toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	r := &fakeRegistration{}
	f.live[r] = true
	return r, nil
}

func (f *fakeInformer) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	if !f.live[r] {
		return errors.New("not registered")
	}
	delete(f.live, r)
	return nil
}

type fakeCache struct {
	cache.Cache
	informer *fakeInformer
}

func (c fakeCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informer, nil
}

// TestReleaseRemovesEveryHandler: the handlers an activation's sources
// add to a shared informer are removed by Release, another activation's
// stay, and a handler added after Release is refused and not left behind.
func TestReleaseRemovesEveryHandler(t *testing.T) {
	shared := &fakeInformer{live: map[toolscache.ResourceEventHandlerRegistration]bool{}}
	c := fakeCache{informer: shared}
	first, second := New(c), New(c)
	add := func(s *Set) error {
		i, err := s.Cache().GetInformer(context.Background(), &corev1.Pod{})
		if err != nil {
			return err
		}
		_, err = i.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{}, toolscache.HandlerOptions{})
		return err
	}
	for _, s := range []*Set{first, first, second} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(shared.live); got != 3 {
		t.Fatalf("%d handlers on the informer, want 3", got)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if got := len(shared.live); got != 1 || second.Len() != 1 || first.Len() != 0 {
		t.Errorf("after the first activation's Release: %d handlers on the informer (want 1, the second's), sets hold %d and %d", got, first.Len(), second.Len())
	}
	if err := add(first); !errors.Is(err, ErrReleased) {
		t.Errorf("a handler added after Release: %v, want ErrReleased", err)
	}
	if got := len(shared.live); got != 1 {
		t.Errorf("%d handlers on the informer after a refused add, want 1", got)
	}
	if err := first.Release(); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}
