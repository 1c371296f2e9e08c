package schema

import (
	"net/url"

	"fleetgen.dev/fleetgen/pkg/problem"
)

func (v *validator) manager() {
	m := &v.f.Spec.Manager
	v.name("spec.manager.name", "name", m.Name)
	v.name("spec.manager.namespace", "namespace", m.Namespace)
	var needs *Cluster
	for i := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[i]
		if m := c.ModeOf(); m != nil && m.APIServerURL {
			needs = c
			break
		}
	}
	const wantURL = "want https://HOST[:PORT]"
	if m.APIServerURL == "" {
		if needs != nil {
			v.add(problem.Required("spec.manager.apiServerURL", "apiServerURL is required because cluster %q uses mode %s: %s", needs.Name, needs.Registration.Mode, wantURL))
		}
	} else if u, err := url.Parse(m.APIServerURL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		v.add(problem.InvalidValue("spec.manager.apiServerURL", "invalid API server URL %q: %s (agents only talk TLS)", m.APIServerURL, wantURL))
	}
	if ca := m.APIServerCA; ca != nil {
		v.ref("spec.manager.apiServerCA", ca, formFile|formValue, true)
		// The agents' values carry it as text, unchanged.
		if len(ca.Data) > 0 && !yamlText(ca.Data) {
			v.add(problem.Other("spec.manager.apiServerCA", "not a PEM text file (control characters or not UTF-8): want PEM certificates"))
		}
	}
}
