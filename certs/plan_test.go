package certs

import (
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// t0 is a whole second: certificate times have second precision.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func planOptions() Options {
	return Options{
		SecretNamespace:    "ns",
		SecretName:         "s",
		DNSNames:           []string{"svc.ns.svc"},
		IPAddresses:        []net.IP{net.ParseIP("127.0.0.1")},
		CAValidity:         100 * time.Hour,
		CARenewBefore:      30 * time.Hour,
		ServingValidity:    10 * time.Hour,
		RenewBefore:        3 * time.Hour,
		CAPropagationDelay: time.Minute,
	}.Default()
}

// generated returns fresh material issued at t.
func generated(t *testing.T, at time.Time, o Options) material {
	t.Helper()
	m, err := apply(at, decision{step: stepGenerate}, material{}, o)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return m
}

func mustApply(t *testing.T, at time.Time, s step, m material, o Options) material {
	t.Helper()
	out, err := apply(at, decision{step: s}, m, o)
	if err != nil {
		t.Fatalf("apply %s: %v", s, err)
	}
	return out
}

func TestDecide(t *testing.T) {
	o := planOptions()
	fresh := generated(t, t0, o)
	// late has a serving certificate still valid when the CA is due at 70h.
	late := mustApply(t, t0.Add(65*time.Hour), stepIssue, fresh, o)
	staged := mustApply(t, t0.Add(70*time.Hour), stepStageCA, late, o)
	stagedUnknown := staged
	stagedUnknown.stagedAt = time.Time{}
	renamed := o
	renamed.DNSNames = []string{"other.ns.svc"}
	// An old CA that expires before the current serving certificate does.
	withOld := fresh
	oldCA := generated(t, t0.Add(-95*time.Hour), o).ca.cert
	withOld.bundle = []*x509.Certificate{fresh.ca.cert, oldCA}

	type got struct {
		Step step
		Next time.Time
	}
	tests := []struct {
		name     string
		now      time.Time
		m        material
		parseErr error
		o        Options
		want     got
	}{
		{name: "unusable secret is regenerated", now: t0, parseErr: errors.New("no key"), o: o, want: got{Step: stepGenerate}},
		{name: "fresh material waits for serving renewal", now: t0, m: fresh, o: o, want: got{Next: t0.Add(7 * time.Hour)}},
		{name: "serving inside renewBefore is reissued", now: t0.Add(7 * time.Hour), m: fresh, o: o, want: got{Step: stepIssue}},
		{name: "expired serving is reissued", now: t0.Add(10 * time.Hour), m: fresh, o: o, want: got{Step: stepIssue}},
		{name: "CA inside caRenewBefore stages a new CA", now: t0.Add(70 * time.Hour), m: late, o: o, want: got{Step: stepStageCA}},
		{name: "expired CA regenerates everything", now: t0.Add(100 * time.Hour), m: fresh, o: o, want: got{Step: stepGenerate}},
		{name: "staged CA waits for propagation", now: t0.Add(70*time.Hour + 30*time.Second), m: staged, o: o,
			want: got{Next: t0.Add(70*time.Hour + time.Minute)}},
		{name: "staged CA switches after propagation", now: t0.Add(70*time.Hour + time.Minute), m: staged, o: o, want: got{Step: stepIssue}},
		{name: "staged CA of unknown age switches at once", now: t0.Add(70 * time.Hour), m: stagedUnknown, o: o, want: got{Step: stepIssue}},
		{name: "changed names reissue", now: t0, m: fresh, o: renamed, want: got{Step: stepIssue}},
		{name: "old CA is pruned when it expires", now: t0.Add(5 * time.Hour), m: withOld, o: o, want: got{Step: stepPrune}},
		{name: "old CA expiry is the next check", now: t0, m: withOld, o: o, want: got{Next: oldCA.NotAfter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(tt.now, tt.m, tt.parseErr, tt.o)
			if diff := cmp.Diff(tt.want, got{Step: d.step, Next: d.next}); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRotationNeverOutrunsBundle walks the policy through several CA
// lifetimes the way the Rotator does, with a client that only learns a new
// bundle at each write, and checks that at every instant the presented
// serving certificate verifies against the bundle written no later than
// CAPropagationDelay before it.
func TestRotationNeverOutrunsBundle(t *testing.T) {
	o := planOptions()
	o.CAPropagationDelay = 2 * time.Minute
	m := generated(t, t0, o)
	// trusted is the bundle a client has had for at least the propagation delay.
	type published struct {
		at     time.Time
		bundle []*x509.Certificate
	}
	history := []published{{at: t0, bundle: m.bundle}}
	steps := map[step]int{}
	for now := t0; now.Before(t0.Add(250 * time.Hour)); now = now.Add(time.Minute) {
		d := decide(now, m, nil, o)
		if d.step != stepNone {
			steps[d.step]++
			m = mustApply(t, now, d.step, m, o)
			history = append(history, published{at: now, bundle: m.bundle})
		}
		var trusted []*x509.Certificate
		for _, p := range history {
			if !p.at.After(now.Add(-o.CAPropagationDelay)) {
				trusted = p.bundle
			}
		}
		if trusted == nil {
			continue // nothing was trusted before the first issue
		}
		pool := x509.NewCertPool()
		for _, c := range trusted {
			pool.AddCert(c)
		}
		if _, err := m.serving.cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: o.DNSNames[0]}); err != nil {
			t.Fatalf("at %s the served certificate does not verify against the propagated bundle: %v", now.Sub(t0), err)
		}
	}
	// Over 250h with a 100h CA (staged at 70h) there are 3 CA rotations and
	// many serving renewals; what matters is that each kind of step happened.
	for _, s := range []step{stepStageCA, stepIssue, stepPrune} {
		if steps[s] == 0 {
			t.Errorf("step %s never happened: %v", s, steps)
		}
	}
}

func TestParseMaterialRoundTrip(t *testing.T) {
	o := planOptions()
	m := mustApply(t, t0.Add(70*time.Hour), stepStageCA, generated(t, t0, o), o)
	got, err := parseMaterial(m.data(), m.stagedAt.Format(time.RFC3339))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	serials := func(m material) []string {
		var out []string
		for _, c := range m.bundle {
			out = append(out, c.SerialNumber.String())
		}
		return append(out, m.ca.cert.SerialNumber.String(), m.serving.cert.SerialNumber.String(), m.stagedAt.String())
	}
	if diff := cmp.Diff(serials(m), serials(got)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	broken := m.data()
	broken[CAKeyKey] = generated(t, t0, o).ca.keyPEM
	if _, err := parseMaterial(broken, ""); err == nil {
		t.Errorf("parse of a CA key that does not match the CA: want error, got none")
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		wantErr bool
	}{
		{name: "defaults with names", o: Options{SecretNamespace: "n", SecretName: "s", DNSNames: []string{"a"}}},
		{name: "no secret", o: Options{DNSNames: []string{"a"}}, wantErr: true},
		{name: "self-signed without names", o: Options{SecretNamespace: "n", SecretName: "s"}, wantErr: true},
		{name: "cert-manager without names", o: Options{Mode: ModeCertManager, SecretNamespace: "n", SecretName: "s"}},
		{name: "unknown mode", o: Options{Mode: "acme", SecretNamespace: "n", SecretName: "s"}, wantErr: true},
		{name: "CA renewal shorter than serving renewal", o: Options{SecretNamespace: "n", SecretName: "s", DNSNames: []string{"a"},
			CAValidity: time.Hour, CARenewBefore: time.Minute, ServingValidity: time.Hour, RenewBefore: 10 * time.Minute}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Default().Validate()
			if diff := cmp.Diff(tt.wantErr, err != nil); diff != "" {
				t.Errorf("Validate error %v (-want +got):\n%s", err, diff)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{in: "self-signed", want: ModeSelfSigned},
		{in: "cert-manager", want: ModeCertManager},
		{in: "certmanager", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q) error %v (-want +got):\n%s", tt.in, err, diff)
		}
	}
}
