package v1alpha2

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The binary's flags that set listen addresses outside the configuration
// file; field errors about them are reported at these names.
const (
	MetricsBindAddressFlag = "--metrics-bind-address"
	ProbeBindAddressFlag   = "--health-probe-bind-address"
)

// Listener is one address a server of the binary listens on, and where it
// is set: a field path of the configuration or a flag's name.
type Listener struct {
	Path    *field.Path
	Address string
	// Server names the server in messages ("the metrics server").
	Server string
	// RandomPort allows port 0 (the kernel picks a free port): for the
	// metrics and probe servers, which nothing outside finds by port.
	RandomPort bool
}

// listeners are the addresses the configuration sets: the webhook server
// always, the external scaler when it is on.
func (c *Configuration) listeners() []Listener {
	ls := []Listener{{
		Path:    field.NewPath("webhook", "port"),
		Address: net.JoinHostPort(c.Webhook.Host, strconv.Itoa(c.Webhook.Port)),
		Server:  "the webhook server",
	}}
	if a := c.Autoscaler.ExternalScaler.BindAddress; a != "" {
		ls = append(ls, Listener{Path: field.NewPath("autoscaler", "externalScaler", "bindAddress"), Address: a, Server: "the external scaler"})
	}
	return ls
}

// FlagListeners are the metrics and probe servers' addresses as the
// binary's flags give them; "0" (or "") turns a server off.
func FlagListeners(metricsAddr, probeAddr string) []Listener {
	var ls []Listener
	for _, l := range []Listener{
		{Path: field.NewPath(MetricsBindAddressFlag), Address: metricsAddr, Server: "the metrics server (and the debug and activity endpoints)", RandomPort: true},
		{Path: field.NewPath(ProbeBindAddressFlag), Address: probeAddr, Server: "the health probe server", RandomPort: true},
	} {
		if l.Address != "" && l.Address != "0" {
			ls = append(ls, l)
		}
	}
	return ls
}

// ValidateListeners checks the addresses flags give (FlagListeners)
// against each other and against the configuration's: each must be
// host:port or :port with a port from 1 to 65535, and no two servers may
// listen on the same port of the same (or every) interface, or the second
// would fail to start, on the elected leader, long after the
// configuration was accepted. Validate checks the configuration's own
// addresses; this adds what only the command line knows.
func (c *Configuration) ValidateListeners(flags []Listener) field.ErrorList {
	var errs field.ErrorList
	all := c.listeners()
	for _, l := range flags {
		errs = append(errs, validateListener(l)...)
		errs = append(errs, conflicts(l, all)...)
		all = append(all, l)
	}
	return errs
}

// validateConfigListeners is Validate's part: the configuration's own
// addresses (the webhook port has its own check), and that they differ.
func (c *Configuration) validateConfigListeners() field.ErrorList {
	var errs field.ErrorList
	ls := c.listeners()
	if h := c.Webhook.Host; h != "" && net.ParseIP(h) == nil {
		for _, msg := range validation.IsDNS1123Subdomain(h) {
			errs = append(errs, field.Invalid(field.NewPath("webhook", "host"), h, "must be an IP address or a host name ("+msg+"); leave it out for every interface"))
		}
	}
	for i, l := range ls {
		if i > 0 { // the webhook's port and host are checked on their own
			errs = append(errs, validateListener(l)...)
		}
		errs = append(errs, conflicts(l, ls[:i])...)
	}
	return errs
}

// hostPort splits a listen address; ok is false when it is not one.
func hostPort(addr string) (host string, port int, ok bool) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil || p == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 || strings.HasPrefix(p, "+") {
		return "", 0, false
	}
	return h, n, true
}

func validateListener(l Listener) field.ErrorList {
	example := `e.g. ":9090" or "127.0.0.1:9090"`
	h, port, ok := hostPort(l.Address)
	switch {
	case !ok:
		if _, p, err := net.SplitHostPort(l.Address); err == nil && p != "" {
			return field.ErrorList{field.Invalid(l.Path, l.Address, fmt.Sprintf("port %s is not a number from 1 to 65535; write host:port or :port, %s", p, example))}
		}
		return field.ErrorList{field.Invalid(l.Path, l.Address, "must be host:port or :port, "+example)}
	case port == 0 && !l.RandomPort:
		return field.ErrorList{field.Invalid(l.Path, l.Address, "port 0 picks a random port, which no client can be told; give a port from 1 to 65535, "+example)}
	case h != "" && net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(h)) > 0:
		return field.ErrorList{field.Invalid(l.Path, l.Address, "host must be an IP address or a host name, or left out for every interface, "+example)}
	}
	return nil
}

// conflicts reports l against every listener of others it would collide
// with: the same port on the same host, or on every interface (an empty
// host, 0.0.0.0 or ::) and any host. Port 0 never collides.
func conflicts(l Listener, others []Listener) field.ErrorList {
	h, port, ok := hostPort(l.Address)
	if !ok || port == 0 {
		return nil
	}
	var errs field.ErrorList
	for _, o := range others {
		oh, oport, ok := hostPort(o.Address)
		if !ok || oport != port {
			continue
		}
		if wildcard(h) || wildcard(oh) || sameHost(h, oh) {
			errs = append(errs, field.Duplicate(l.Path, fmt.Sprintf("%s: %s listens on %s (%s); give each server a port of its own", l.Address, o.Server, o.Address, o.Path)))
		}
	}
	return errs
}

func wildcard(h string) bool {
	ip := net.ParseIP(h)
	return h == "" || (ip != nil && ip.IsUnspecified())
}

func sameHost(a, b string) bool {
	if x, y := net.ParseIP(a), net.ParseIP(b); x != nil && y != nil {
		return x.Equal(y)
	}
	return strings.EqualFold(a, b)
}
