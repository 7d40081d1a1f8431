// Package watches gives a kind activated while the manager runs (a
// ScaleProfile, a kind of the configuration file) watches that end with
// it. controller-runtime's Kind source adds an event handler to the
// manager's shared informer and never removes it: each handler keeps two
// goroutines and its buffer for the informer's life, so a kind activated
// again and again (a ScaleProfile re-applied, its CRD's schema changed)
// would leave them behind every time. A Set hands the sources a cache
// that records every handler they add, and Release removes them.
//
// It must not decide or write anything.
package watches

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrReleased is what a source gets when it adds a handler after its Set
// was released (a kind stopped while its watch was still starting).
var ErrReleased = errors.New("the kind's watches were released: it is no longer active")

// Set is the event handlers one activation of a kind added to shared
// informers. The zero value is not usable; build one with New.
type Set struct {
	cache cache.Cache

	mu       sync.Mutex
	released bool
	handlers []registration
}

type registration struct {
	informer cache.Informer
	handle   toolscache.ResourceEventHandlerRegistration
}

// New is an empty Set over c.
func New(c cache.Cache) *Set { return &Set{cache: c} }

// Cache is the cache to build the activation's sources on (source.Kind):
// informers come from the shared cache, and every handler added to them
// through it is recorded in s.
func (s *Set) Cache() cache.Cache { return trackingCache{Cache: s.cache, set: s} }

// Len is how many handlers s holds now.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handlers)
}

// Release removes every handler s recorded from its informer, and refuses
// those added later. Call it once the controllers that read them have
// stopped. It is idempotent.
func (s *Set) Release() error {
	s.mu.Lock()
	handlers := s.handlers
	s.handlers, s.released = nil, true
	s.mu.Unlock()
	var errs []error
	for _, h := range handlers {
		if err := h.informer.RemoveEventHandler(h.handle); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Set) add(i cache.Informer, h toolscache.ResourceEventHandlerRegistration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return errors.Join(ErrReleased, i.RemoveEventHandler(h))
	}
	s.handlers = append(s.handlers, registration{i, h})
	return nil
}

// trackingCache hands out informers whose added handlers are recorded.
type trackingCache struct {
	cache.Cache
	set *Set
}

func (c trackingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return trackingInformer{Informer: i, set: c.set}, nil
}

func (c trackingCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return trackingInformer{Informer: i, set: c.set}, nil
}

type trackingInformer struct {
	cache.Informer
	set *Set
}

func (i trackingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.track(i.Informer.AddEventHandler(h))
}

func (i trackingInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.track(i.Informer.AddEventHandlerWithResyncPeriod(h, resync))
}

func (i trackingInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.track(i.Informer.AddEventHandlerWithOptions(h, o))
}

func (i trackingInformer) track(reg toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err != nil {
		return nil, err
	}
	if err := i.set.add(i.Informer, reg); err != nil {
		return nil, err
	}
	return reg, nil
}
