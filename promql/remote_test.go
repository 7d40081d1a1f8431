package promql

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// promAPI answers /api/v1/query like Prometheus, with canned bodies keyed
// by query, and records what it was asked.
func promAPI(t *testing.T, check func(r *http.Request) bool, bodies map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !check(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		if r.URL.Path != "/prefix/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		body, ok := bodies[r.Form.Get("query")]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`)
			return
		}
		if got := r.Form.Get("time"); got != "1732100300" && got != "1732100300.000" {
			t.Errorf("time = %q, want 1732100300", got)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	})
}

var remoteBodies = map[string]string{
	`sum(rate(x{namespace="default"}[1m]))`: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1732100300,"2.5"]}]}}`,
	`scalar(x)`:                             `{"status":"success","data":{"resultType":"scalar","result":[1732100300,"NaN"]}}`,
	`x / 0`:                                 `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1732100300,"+Inf"]}]}}`,
	`x`:                                     `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1732100300,"1"]},{"metric":{"pod":"b"},"value":[1732100300,"2"]}]}}`,
	`absent_metric`:                         `{"status":"success","data":{"resultType":"vector","result":[]}}`,
	`x[1m]`:                                 `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
}

func TestRemoteEval(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bearer := func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer s3cret" && r.Header.Get("X-Scope-OrgID") == "team"
	}
	basic := func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "me" && p == "pw" }

	tlsSrv := httptest.NewTLSServer(promAPI(t, bearer, remoteBodies))
	defer tlsSrv.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}))
	basicSrv := httptest.NewServer(promAPI(t, basic, remoteBodies))
	defer basicSrv.Close()

	bearerRemote, err := NewRemote(RemoteOptions{URL: tlsSrv.URL + "/prefix/", BearerTokenFile: tokenFile, CA: caPEM, Headers: map[string]string{"X-Scope-OrgID": "team"}})
	if err != nil {
		t.Fatal(err)
	}
	basicRemote, err := NewRemote(RemoteOptions{URL: basicSrv.URL + "/prefix", Username: "me", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	untrusting, err := NewRemote(RemoteOptions{URL: tlsSrv.URL + "/prefix", BearerToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	wrongPassword, err := NewRemote(RemoteOptions{URL: basicSrv.URL + "/prefix", Username: "me", Password: "nope"})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		remote *Remote
		query  string
		want   evalOutcome
	}{
		{name: "bearer, CA, placeholder", remote: bearerRemote, query: `sum(rate(x{namespace="${namespace}"}[1m]))`, want: evalOutcome{Kind: KindValue, Value: 2.5}},
		{name: "basic auth", remote: basicRemote, query: `sum(rate(x{namespace="${namespace}"}[1m]))`, want: evalOutcome{Kind: KindValue, Value: 2.5}},
		{name: "NaN scalar", remote: basicRemote, query: `scalar(x)`, want: evalOutcome{Kind: KindNaN, Value: math.NaN()}},
		{name: "Inf", remote: basicRemote, query: `x / 0`, want: evalOutcome{Kind: KindInf, Value: math.Inf(1)}},
		{name: "no data", remote: basicRemote, query: `absent_metric`, want: evalOutcome{Kind: KindNoData}},
		{name: "several series", remote: basicRemote, query: `x`, want: evalOutcome{Err: "shape"}},
		{name: "matrix", remote: basicRemote, query: `x[1m]`, want: evalOutcome{Err: "shape"}},
		{name: "bad query", remote: basicRemote, query: `sum(`, want: evalOutcome{Err: "query"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := outcome(tc.remote.Eval(context.Background(), tc.query, evalAt, map[string]string{"namespace": "default"}))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// Without the CA the server's certificate is not trusted; with a wrong
	// password the server refuses. Both are evaluation errors, not query
	// errors: the query may be fine.
	for name, r := range map[string]*Remote{"untrusted CA": untrusting, "wrong password": wrongPassword} {
		_, err := r.Eval(context.Background(), `x`, evalAt, nil)
		var qe *QueryError
		if err == nil || errors.As(err, &qe) {
			t.Errorf("%s: error = %v, want a non-query error", name, err)
		}
		var uerr x509.UnknownAuthorityError
		if name == "untrusted CA" && !errors.As(err, &uerr) {
			t.Errorf("%s: error = %v, want an unknown authority error", name, err)
		}
	}
}

func TestNewRemoteRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "prometheus:9090", "ftp://x"} {
		if _, err := NewRemote(RemoteOptions{URL: u}); err == nil {
			t.Errorf("NewRemote(%q): want an error", u)
		}
	}
}

// TestV10RemoteNotSent: a query over the limits is refused by Remote
// without reaching the server, so a trigger cannot make a shared
// Prometheus do what the embedded engine refuses.
func TestV10RemoteNotSent(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"scalar","result":[1732100300,"1"]}}`)
	}))
	defer srv.Close()
	r, err := NewRemote(RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range hostileQueries {
		_, err := r.Eval(context.Background(), q, evalAt, nil)
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("%s: error = %v, want a *LimitError", name, err)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the server was asked %d queries over the limits, want 0", n)
	}
	if _, err := r.Eval(context.Background(), `scalar(x)`, evalAt, nil); err != nil || asked.Load() != 1 {
		t.Errorf("a query within the limits: error %v after %d requests, want it sent once", err, asked.Load())
	}
}

// TestRemoteBoundsWhatComesBack: every query asks the server for at most a
// few series, and an answer over the body bound is an error (never a
// truncated number), so a query selecting everything on a shared server
// costs neither side its size.
func TestRemoteBoundsWhatComesBack(t *testing.T) {
	var limits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		limits = append(limits, r.Form.Get("limit"))
		w.Header().Set("Content-Type", "application/json")
		// A server that ignores the limit and answers 2 MB.
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		for i := range 20_000 {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"metric":{"pod":"pod-%05d-%s"},"value":[1732100300,"1"]}`, i, strings.Repeat("x", 40))
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer srv.Close()
	r, err := NewRemote(RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Eval(context.Background(), `{__name__=~".+"}`, evalAt, nil)
	if err == nil || !strings.Contains(err.Error(), "remote answer is over 1048576 bytes") {
		t.Errorf("error = %v, want the body bound", err)
	}
	if diff := cmp.Diff([]string{"4"}, limits); diff != "" {
		t.Errorf("limit parameters sent (-want +got):\n%s", diff)
	}
}
