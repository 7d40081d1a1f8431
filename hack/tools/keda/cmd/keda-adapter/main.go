// Command keda-adapter is KEDA's metrics API server (external.metrics.k8s.io)
// for scaleplane's tests: KEDA's own provider and its gRPC link to the
// operator (pkg/provider, pkg/metricsservice), wired as KEDA's cmd/adapter
// wires them, minus the extra /metrics server that command always binds on
// every interface (tests listen on 127.0.0.1 only).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/metricsservice"
	kedaprovider "github.com/kedacore/keda/v2/pkg/provider"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

type adapter struct{ basecmd.AdapterBase }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "keda-adapter:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := ctrl.SetupSignalHandler()
	a := &adapter{}
	a.Name = "keda-adapter"
	var metricsServiceAddr, authority string
	a.Flags().StringVar(&metricsServiceAddr, "metrics-service-address", "", "host:port of the KEDA operator's gRPC metrics service")
	a.Flags().StringVar(&authority, "metrics-service-grpc-authority", "", "authority (server name) for the metrics service when the address is not in its certificate")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	klog.InitFlags(nil)
	a.Flags().AddGoFlagSet(flag.CommandLine)
	if err := a.Flags().Parse(os.Args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	if metricsServiceAddr == "" {
		return fmt.Errorf("--metrics-service-address is required")
	}
	p, err := a.makeProvider(ctx, metricsServiceAddr, authority)
	if err != nil {
		return err
	}
	a.WithExternalMetrics(p)
	return a.Run(ctx)
}

// makeProvider is KEDA's cmd/adapter makeProvider.
func (a *adapter) makeProvider(ctx context.Context, addr, authority string) (provider.ExternalMetricsProvider, error) {
	s := scheme.Scheme
	if err := appsv1.SchemeBuilder.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := kedav1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		return nil, err
	}
	namespaces, err := kedautil.GetWatchNamespaces()
	if err != nil {
		return nil, err
	}
	cfg := ctrl.GetConfigOrDie()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: server.Options{BindAddress: "0"},
		Scheme:  s,
		Cache: ctrlcache.Options{
			DefaultNamespaces: namespaces,
			DefaultTransform:  kedautil.CacheObjectTransform,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("build manager: %w", err)
	}
	// The operator and the adapter authenticate each other with the
	// certificates in --cert-dir (ca.crt, tls.crt, tls.key).
	grpcClient, err := metricsservice.NewGrpcClient(ctx, addr, a.SecureServing.ServerCert.CertDirectory, authority, "", grpcprom.NewClientMetrics(), false)
	if err != nil {
		return nil, fmt.Errorf("connect to the metrics service at %s: %w", addr, err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "keda-adapter: manager:", err)
			os.Exit(1)
		}
	}()
	return kedaprovider.NewProvider(ctx, ctrl.Log.WithName("keda-adapter"), mgr.GetClient(), *grpcClient), nil
}
