package schema

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// hostSecurity refuses a registry host that fleet.yaml declares both secure
// (HTTPS) and insecure (plain HTTP): spec.registry, each spec.sourceMirrors
// mirror and an oci spec.source each say how their host is reached. The
// target registry's credentials (FLEETGEN_REGISTRY_*) go to its host; a
// source mirror on that host declared insecure would make fleetgen ask it,
// with those credentials, over plain HTTP (SPEC §4). The error stands at each
// insecure declaration and names the secure one. Loopback hosts are exempt:
// plain HTTP to them never leaves the machine (and go-containerregistry
// talks plain HTTP to them whatever fleet.yaml says).
func (v *validator) hostSecurity() {
	type decl struct {
		path     string // the field that declares how the host is reached
		insecure bool
	}
	var decls []decl
	hosts := map[string][]int{} // host -> indexes into decls
	add := func(host, path string, insecure bool) {
		if host == "" || hostPort(host) != "" || loopback(host) {
			return // reported where the host is checked; loopback never leaves the machine
		}
		host = CanonicalRegistry(host)
		hosts[host] = append(hosts[host], len(decls))
		decls = append(decls, decl{path, insecure})
	}
	s := &v.f.Spec
	add(s.Registry.Host, "spec.registry", s.Registry.Insecure)
	for i, m := range s.SourceMirrors {
		host, _, _ := strings.Cut(m.Mirror, "/")
		add(host, "spec.sourceMirrors["+strconv.Itoa(i)+"]", m.Insecure)
	}
	if s.Source.Kind == SourceOCI {
		if u, err := url.Parse(s.Source.URL); err == nil && u.Scheme == "oci" {
			add(u.Host, "spec.source", s.Source.Insecure)
		}
	}
	for host, idx := range hosts {
		secure := ""
		for _, i := range idx {
			if !decls[i].insecure {
				secure = decls[i].path
				break
			}
		}
		if secure == "" {
			continue
		}
		for _, i := range idx {
			if d := decls[i]; d.insecure {
				v.add(problem.Other(d.path+".insecure", "host %s is declared insecure (plain HTTP) here and secure at %s: a host is reached one way, or credentials meant for HTTPS would cross plain HTTP; want insecure: false here, or the same setting in both places", host, secure))
			}
		}
	}
}

// loopback reports whether host (HOST[:PORT]) is localhost or a loopback
// address.
func loopback(host string) bool {
	h := host
	if strings.HasPrefix(h, "[") {
		h, _, _ = strings.Cut(h[1:], "]")
	} else {
		h, _, _ = strings.Cut(h, ":")
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
