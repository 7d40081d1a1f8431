package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Manager is a controller-runtime manager running in the test process.
type Manager struct {
	manager.Manager
	cancel    context.CancelFunc
	done      chan error
	noWebhook bool
}

// ManagerOptions tunes NewManager.
type ManagerOptions struct {
	// Config overrides the admin rest.Config (to run under a narrower role).
	Config *rest.Config
	// NoWebhookServer leaves the webhook server out (a webhook outage).
	NoWebhookServer bool
	// Manager are the manager's options, as the caller's operator sets
	// them; NewManager fills only what is left out: the cluster's scheme,
	// metrics and health servers off, a webhook server where the installed
	// webhook configurations point (unless NoWebhookServer), and a cache
	// that also keeps unstructured objects, as the scaleplane binary's
	// (scaleplane itself does not need that).
	Manager ctrl.Options
}

// NewManager builds a manager bound to the cluster, whose webhook server
// serves where the installed webhook configurations point, with the TLS key
// pair the framework made. Metrics and health servers are off. Call Start.
func (c *Cluster) NewManager(opts ManagerOptions) (*Manager, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = rest.CopyConfig(c.Config)
	}
	mopts := opts.Manager
	if mopts.Scheme == nil {
		mopts.Scheme = c.Scheme
	}
	if mopts.Metrics.BindAddress == "" {
		mopts.Metrics.BindAddress = "0"
	}
	if mopts.HealthProbeBindAddress == "" {
		mopts.HealthProbeBindAddress = "0"
	}
	if mopts.Client.Cache == nil {
		mopts.Client.Cache = &client.CacheOptions{Unstructured: true}
	}
	if !opts.NoWebhookServer && mopts.WebhookServer == nil {
		mopts.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    c.WebhookHost,
			Port:    c.WebhookPort,
			CertDir: c.WebhookCertDir,
		})
	}
	m, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("build manager: %w", err)
	}
	return &Manager{Manager: m, noWebhook: opts.NoWebhookServer}, nil
}

// Start runs the manager until Stop and waits until its caches have synced
// and, when it has one, its webhook server answers over TLS.
func (m *Manager) Start(ctx context.Context) error {
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan error, 1)
	go func() { m.done <- m.Manager.Start(ctx) }()
	if !m.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("manager caches did not sync")
	}
	if m.noWebhook {
		// GetWebhookServer would create a default server (and the manager
		// would then fail for want of certificates).
		return nil
	}
	srv := m.GetWebhookServer()
	check := srv.StartedChecker()
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-m.done:
			return false, fmt.Errorf("manager stopped while starting: %w", err)
		default:
		}
		return check(req) == nil, nil
	})
}

// Stop ends the manager and waits for it.
func (m *Manager) Stop() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	err := <-m.done
	m.cancel = nil
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
