package app

import (
	"context"
	"errors"
	"time"

	configv1alpha2 "github.com/scaleplane/scaleplane/api/config/v1alpha2"
	"github.com/scaleplane/scaleplane/controllers/autoscaler"
	"github.com/scaleplane/scaleplane/promql"
	"github.com/scaleplane/scaleplane/scaling"
)

// ValidationSources are the trigger sources an App of cfg admits triggers
// of, for offline checks (scaleplane convert): the same registrations and
// query limits as the App's webhook, over query sources that evaluate
// nothing. remote registers "prometheus" even when cfg names no server, for
// a check that assumes one will be configured.
func ValidationSources(cfg *configv1alpha2.Configuration, remote bool) (*scaling.Sources, error) {
	limits := queryLimits(cfg)
	var r promql.Source
	if remote || cfg.Autoscaler.PrometheusURL != "" {
		r = noEval{}
	}
	return autoscaler.NewSources(noEval{}, r, limits)
}

// noEval is a query source for validation only.
type noEval struct{}

func (noEval) Eval(context.Context, string, time.Time, map[string]string) (promql.Result, error) {
	return promql.Result{}, errors.New("offline validation evaluates no query")
}
