package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// material is what a self-signed Secret holds, parsed.
type material struct {
	// bundle is every CA a client must trust: the signing CA first, then
	// older CAs that still sign a certificate some replica may present.
	bundle []*x509.Certificate
	// ca is the signing CA; ca.cert == bundle[0].
	ca keyPair
	// serving is the certificate the webhook server presents.
	serving keyPair
	// stagedAt is when bundle[0] was added; zero when unknown.
	stagedAt time.Time
}

// parseMaterial reads self-signed Secret data. On error the returned
// material still carries whatever CA bundle could be read, so that a
// regeneration keeps trusting certificates replicas may still present.
func parseMaterial(data map[string][]byte, stagedAt string) (material, error) {
	var m material
	var errs []error
	bundle, err := parseBundle(data[CAKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", CAKey, err))
	}
	m.bundle = bundle
	if err == nil {
		m.ca, err = parseKeyPair(encodeBundle(bundle[:1]), data[CAKeyKey])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s does not match the first certificate of %s: %w", CAKeyKey, CAKey, err))
		}
	}
	m.serving, err = parseKeyPair(data[CertKey], data[KeyKey])
	if err != nil {
		errs = append(errs, fmt.Errorf("%s/%s: %w", CertKey, KeyKey, err))
	}
	if stagedAt != "" {
		if t, err := time.Parse(time.RFC3339, stagedAt); err == nil {
			m.stagedAt = t
		}
	}
	return m, errors.Join(errs...)
}

// step is one change the writer makes to the Secret.
type step string

const (
	stepNone     step = ""
	stepGenerate step = "generate"      // new CA and serving certificate
	stepStageCA  step = "stage-ca"      // new signing CA added to the bundle; serving unchanged
	stepIssue    step = "issue-serving" // new serving certificate and key under the signing CA
	stepPrune    step = "prune-bundle"  // drop expired CAs from the bundle
)

// decision is what to do now and, when nothing, when to look again.
type decision struct {
	step   step
	reason string
	next   time.Time
}

// decide is the renewal policy, a pure function of the clock, the Secret's
// content and the options. CA rotation takes two steps so that no client
// ever sees a serving certificate its caBundle cannot verify: first the new
// CA joins the bundle (stage-ca); only after CAPropagationDelay is a serving
// certificate signed by it (issue-serving).
func decide(now time.Time, m material, parseErr error, o Options) decision {
	if parseErr != nil {
		return decision{step: stepGenerate, reason: fmt.Sprintf("secret content unusable: %v", parseErr)}
	}
	signing := m.ca.cert
	if !now.Before(signing.NotAfter) {
		return decision{step: stepGenerate, reason: fmt.Sprintf("CA expired at %s", signing.NotAfter.Format(time.RFC3339))}
	}
	serving := m.serving.cert
	signedByCurrent := serving.CheckSignatureFrom(signing) == nil
	if !now.Before(serving.NotAfter) {
		return decision{step: stepIssue, reason: fmt.Sprintf("serving certificate expired at %s", serving.NotAfter.Format(time.RFC3339))}
	}
	caDue := signing.NotAfter.Add(-o.CARenewBefore)
	if !now.Before(caDue) {
		return decision{step: stepStageCA, reason: fmt.Sprintf("CA expires at %s", signing.NotAfter.Format(time.RFC3339))}
	}
	if !signedByCurrent {
		switchAt := m.stagedAt.Add(o.CAPropagationDelay)
		if m.stagedAt.IsZero() || !now.Before(switchAt) {
			return decision{step: stepIssue, reason: "serving certificate is not signed by the current CA"}
		}
		return decision{next: switchAt}
	}
	if !sameStrings(serving.DNSNames, o.DNSNames) || !sameIPs(serving.IPAddresses, o.IPAddresses) {
		return decision{step: stepIssue, reason: "serving certificate names differ from the options"}
	}
	servingDue := serving.NotAfter.Add(-o.RenewBefore)
	if !now.Before(servingDue) {
		return decision{step: stepIssue, reason: fmt.Sprintf("serving certificate expires at %s", serving.NotAfter.Format(time.RFC3339))}
	}
	next := earliest(caDue, servingDue)
	for _, c := range m.bundle[1:] {
		if !now.Before(c.NotAfter) {
			return decision{step: stepPrune, reason: fmt.Sprintf("CA %s expired", c.SerialNumber)}
		}
		next = earliest(next, c.NotAfter)
	}
	return decision{next: next}
}

// apply carries out a decision, returning the new material.
func apply(now time.Time, d decision, m material, o Options) (material, error) {
	switch d.step {
	case stepGenerate, stepStageCA:
		ca, err := newCA(o.CACommonName, now, o.CAValidity)
		if err != nil {
			return material{}, fmt.Errorf("create CA: %w", err)
		}
		out := material{bundle: append([]*x509.Certificate{ca.cert}, unexpired(now, m.bundle)...), ca: ca, serving: m.serving, stagedAt: now}
		if d.step == stepStageCA {
			return out, nil
		}
		// Nothing was trusted before (or what was is unusable): no client can
		// be verifying against the new CA yet, so there is nothing to wait for.
		out.serving, err = newServing(ca, o.DNSNames, o.IPAddresses, now, o.ServingValidity)
		if err != nil {
			return material{}, fmt.Errorf("issue serving certificate: %w", err)
		}
		out.stagedAt = time.Time{}
		return out, nil
	case stepIssue:
		serving, err := newServing(m.ca, o.DNSNames, o.IPAddresses, now, o.ServingValidity)
		if err != nil {
			return material{}, fmt.Errorf("issue serving certificate: %w", err)
		}
		return material{bundle: append(m.bundle[:1:1], unexpired(now, m.bundle[1:])...), ca: m.ca, serving: serving}, nil
	case stepPrune:
		return material{bundle: append(m.bundle[:1:1], unexpired(now, m.bundle[1:])...), ca: m.ca, serving: m.serving, stagedAt: m.stagedAt}, nil
	}
	return m, nil
}

// data is the Secret data for m.
func (m material) data() map[string][]byte {
	return map[string][]byte{
		CAKey:    encodeBundle(m.bundle),
		CAKeyKey: m.ca.keyPEM,
		CertKey:  m.serving.certPEM,
		KeyKey:   m.serving.keyPEM,
	}
}

func unexpired(now time.Time, certs []*x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range certs {
		if now.Before(c.NotAfter) {
			out = append(out, c)
		}
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
