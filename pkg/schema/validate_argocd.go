package schema

import (
	"fmt"
	"net/url"
	"regexp"

	"fleetgen.dev/fleetgen/pkg/problem"
)

var guidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// apiServers checks spec.clusters[].apiServer: an https URL and a PEM CA,
// never on mode manager, whose kubeconfig says both.
func (v *validator) apiServers() {
	for i := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[i]
		a := c.APIServer
		if a == nil {
			continue
		}
		p := fmt.Sprintf("spec.clusters[%d].apiServer", i)
		if m := c.ModeOf(); m != nil && m.Kubeconfig {
			v.add(problem.Other(p, "apiServer does not apply to mode %s, whose server and CA fleetgen reads from registration.kubeconfig: remove it", c.Registration.Mode))
			continue
		}
		if e := httpsURL(p+".url", a.URL); e != nil {
			v.add(e)
		}
		if a.CA != nil {
			v.ref(p+".ca", a.CA, formFile|formValue, true)
		}
	}
}

// httpsURL reports why s, at path, is not an https://HOST[:PORT][/PATH] URL.
func httpsURL(path, s string) *problem.FieldError {
	if s == "" {
		return problem.Required(path, "url is required: want https://HOST[:PORT], the cluster's API server")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return problem.InvalidValue(path, "invalid API server URL %q: want https://HOST[:PORT]", s)
	}
	return nil
}

// argocd checks spec.argocd (SPEC §1): its namespace, selector and
// authentication, and for every cluster it selects a known server that no
// other selected cluster shares (Argo CD keys clusters by server URL).
func (v *validator) argocd() {
	f := v.f
	a := f.Spec.ArgoCD
	if a == nil {
		return
	}
	if !isDNSLabel(a.Namespace) {
		v.add(problem.InvalidValue("spec.argocd.namespace", "invalid namespace %q: %s", a.Namespace, wantDNSLabel))
	}
	v.labels("spec.argocd.selector", "selector", a.Selector, nil)
	switch w := a.Auth.AzureWorkloadIdentity; {
	case w == nil:
		v.add(problem.Required("spec.argocd.auth", "auth is required: want azureWorkloadIdentity: {clientID: GUID, tenantID: GUID} (no static credential goes to Git)"))
	default:
		p := "spec.argocd.auth.azureWorkloadIdentity"
		switch {
		case w.ClientID == "":
			v.add(problem.Required(p+".clientID", "clientID is required: want the client ID (a GUID) of the identity Argo CD's service accounts are federated with"))
		case !guidRE.MatchString(w.ClientID):
			v.add(problem.InvalidValue(p+".clientID", "invalid clientID %q: want a GUID, e.g. 00000000-0000-0000-0000-000000000000", w.ClientID))
		}
		if w.TenantID != "" && !guidRE.MatchString(w.TenantID) {
			v.add(problem.InvalidValue(p+".tenantID", "invalid tenantID %q: want a GUID, e.g. 00000000-0000-0000-0000-000000000000", w.TenantID))
		}
	}
	servers := map[string]int{}
	for _, i := range f.ArgoCDClusters() {
		c := &f.Spec.Clusters[i]
		p := fmt.Sprintf("spec.clusters[%d]", i)
		if _, ok := c.Labels[ArgoCDSecretTypeLabel]; ok {
			v.add(problem.Other(p+".labels["+ArgoCDSecretTypeLabel+"]", "label %s is Argo CD's, set to cluster on every cluster Secret: want another label key on clusters spec.argocd selects", ArgoCDSecretTypeLabel))
		}
		server, _, ok := c.Server()
		if !ok {
			if m := c.ModeOf(); (m != nil && m.Kubeconfig) || c.APIServer != nil {
				continue // the kubeconfig's or apiServer.url's own problem is reported there
			}
			v.add(problem.Other(p, "spec.argocd selects cluster %q, whose API server is unknown: want apiServer: {url: https://HOST[:PORT], ca: {file: PATH}} (mode manager reads it from the kubeconfig), or a spec.argocd.selector that leaves it out", c.Name))
			continue
		}
		key := serverKey(server)
		if j, dup := servers[key]; dup {
			at := p + ".apiServer.url"
			if m := c.ModeOf(); m != nil && m.Kubeconfig {
				at = p + ".registration.kubeconfig"
			}
			v.add(problem.Other(at, "cluster %q has the API server of cluster %q (spec.clusters[%d]): Argo CD keys clusters by server URL, so one Secret would hide the other; want one server per cluster", c.Name, f.Spec.Clusters[j].Name, j))
			continue
		}
		servers[key] = i
	}
}
