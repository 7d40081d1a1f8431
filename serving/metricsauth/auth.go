// Package metricsauth puts Kubernetes authentication and authorization
// (TokenReview and SubjectAccessReview) in front of the metrics server's
// handlers, answering 401, 403 or 503 as each case is. It is apart from
// package serving because it links k8s.io/apiserver's authenticator and
// authorizer factories (and with them CEL, gRPC and OpenTelemetry), which
// the webhook server, and so every embedding operator, does not need.
package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/scaleplane/scaleplane/serving"
)

// AuthOptions tune Authenticate; the zero value is controller-runtime's
// choice for its metrics filter.
type AuthOptions struct {
	// RetryBackoff spaces the retries of a TokenReview or
	// SubjectAccessReview the API server failed to answer. Default 500 ms,
	// growing 1.5 times, 5 tries (the API server's own delegating
	// authentication's).
	RetryBackoff *wait.Backoff
	// Log receives the failures that are the server's, not the client's.
	Log logr.Logger
}

// Authenticate returns middleware that lets a request through only when
// the API server authenticates its bearer token (a TokenReview) and
// authorizes its method, lower-cased, on its path as a non-resource URL (a
// SubjectAccessReview), as controller-runtime's
// filters.WithAuthenticationAndAuthorization does, with the same caches
// (answers for a token 1 minute, allowed 5 minutes, denied 30 seconds), but
// answering each case for what it is:
//
//   - no bearer token, or one the API server does not accept: 401.
//     controller-runtime answers 500 to a token the API server rejects,
//     because the TokenReview's status.error comes back as an error;
//   - authenticated but not allowed: 403;
//   - the API server could not be asked (down, overloaded, or scaleplane's
//     own RBAC lacks tokenreviews or subjectaccessreviews): 503 with
//     Retry-After, since the same request may succeed later.
func Authenticate(cfg *rest.Config, httpClient *http.Client, o AuthOptions) (func(http.Handler) http.Handler, error) {
	authnClient, err := authenticationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("token review client: %w", err)
	}
	authzClient, err := authorizationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("subject access review client: %w", err)
	}
	backoff := o.RetryBackoff
	if backoff == nil {
		backoff = &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  authnClient,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authzClient,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	log := o.Log
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, ok, err := authn.AuthenticateRequest(r)
			switch {
			case err != nil && unavailable(err):
				log.Error(err, "a TokenReview failed; answering 503", "path", r.URL.Path)
				w.Header().Set("Retry-After", strconv.Itoa(serving.RetryAfterSeconds))
				serving.WriteError(w, http.StatusServiceUnavailable, "authentication is unavailable: the API server could not review the token; retry later")
				return
			case err != nil || !ok:
				w.Header().Set("WWW-Authenticate", `Bearer realm="scaleplane"`)
				serving.WriteError(w, http.StatusUnauthorized, "unauthorized: send a token the API server accepts, as Authorization: Bearer <token>")
				return
			}
			verb := strings.ToLower(r.Method)
			decision, reason, err := authz.Authorize(r.Context(), authorizer.AttributesRecord{User: res.User, Verb: verb, Path: r.URL.Path})
			switch {
			case err != nil:
				log.Error(err, "a SubjectAccessReview failed; answering 503", "path", r.URL.Path, "user", res.User.GetName())
				w.Header().Set("Retry-After", strconv.Itoa(serving.RetryAfterSeconds))
				serving.WriteError(w, http.StatusServiceUnavailable, "authorization is unavailable: the API server could not review the access; retry later")
				return
			case decision != authorizer.DecisionAllow:
				msg := fmt.Sprintf("%s may not %s %s; bind it to a role that grants this non-resource URL", res.User.GetName(), verb, r.URL.Path)
				if reason != "" {
					msg += " (" + reason + ")"
				}
				serving.WriteError(w, http.StatusForbidden, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// unavailable reports whether an authentication error says the API server
// could not be asked, rather than that it refused the token: the request
// failed (an API status such as 500, 429 or 403, a network error, a
// timeout). A refusal comes back as the TokenReview's status.error, a
// plain error.
func unavailable(err error) bool {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		return slices.ContainsFunc(agg.Errors(), unavailable)
	}
	var status apierrors.APIStatus
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &status) || errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
