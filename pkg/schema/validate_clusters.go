package schema

import (
	"fmt"
	"regexp"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// kubeVersionRE is a Kubernetes version as clusters[].kubernetesVersion
// takes it: what Helm's ParseKubeVersion reads, without pre-release or build.
var kubeVersionRE = regexp.MustCompile(`^v?[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,4})?$`)

func (v *validator) groups() {
	seen := map[string]int{}
	for i, g := range v.f.Spec.Groups {
		p := fmt.Sprintf("spec.groups[%d]", i)
		if v.name(p+".name", "group name", g.Name) {
			if j, dup := seen[g.Name]; dup {
				v.add(problem.Duplicate(p+".name", "duplicate group name %q (also spec.groups[%d]): want unique names", g.Name, j))
			} else {
				seen[g.Name] = i
			}
		}
		v.labels(p+".selector", "selector", g.Selector, nil)
	}
}

func (v *validator) defaults() {
	d := &v.f.Spec.Defaults
	v.labels("spec.defaults.labels", "label", d.Labels, nil)
	v.mode("spec.defaults.registration", d.Registration)
	v.tokenTTL("spec.defaults.tokenTTL", d.TokenTTL)
}

func (v *validator) clusters() {
	f := v.f
	names := map[string]int{}
	clientIDs := map[string]int{}
	defaultLabels := f.Spec.Defaults.Labels
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		p := fmt.Sprintf("spec.clusters[%d]", i)
		if v.name(p+".name", "cluster name", c.Name) {
			switch j, dup := names[c.Name]; {
			case dup:
				v.add(problem.Duplicate(p+".name", "duplicate cluster name %q (also spec.clusters[%d]): want unique names", c.Name, j))
			case c.Name == f.Spec.Manager.Name:
				v.add(problem.Other(p+".name", "cluster name %q is the manager's name (spec.manager.name), whose entry point is %s/: want another name", c.Name, layout.ClusterDir(c.Name)))
			default:
				names[c.Name] = i
			}
			if why := layout.ReservedCluster(c.Name); why != "" { // a folder of the output tree
				v.add(problem.Other(p+".name", "cluster name %q is reserved: %s; want another name", c.Name, why))
			}
		}
		// Labels merged in from defaults.labels were checked there.
		v.labels(p+".labels", "label", c.Labels, func(k, val string) bool {
			dv, fromDefaults := defaultLabels[k]
			return fromDefaults && dv == val && !f.Has(p+".labels["+k+"]")
		})

		if c.KubernetesVersion != "" && !kubeVersionRE.MatchString(c.KubernetesVersion) {
			v.add(problem.InvalidValue(p+".kubernetesVersion", "invalid Kubernetes version %q: want MAJOR.MINOR or vMAJOR.MINOR.PATCH, e.g. 1.33 or v1.33.4", c.KubernetesVersion))
		}
		r := &c.Registration
		rp := p + ".registration"
		d := &f.Spec.Defaults
		// A mode or TTL inherited from defaults was checked there.
		if f.Has(rp+".mode") || r.Mode != d.Registration {
			v.mode(rp+".mode", r.Mode)
		}
		m := LookupMode(r.Mode)
		if m == nil {
			continue // which fields apply depends on the mode
		}
		for _, fld := range registrationFields {
			if fld.set(r) && !fld.applies(m) {
				v.add(problem.NotApplicable(rp+"."+fld.name, "%s applies only to mode %s, not %s: remove it", fld.name, problem.OrList(modeNames(fld.applies)), r.Mode))
			}
		}
		switch {
		case !m.Kubeconfig:
		case r.Kubeconfig == nil:
			v.add(problem.Other(rp+".kubeconfig", "mode %s needs the cluster's kubeconfig: want kubeconfig: {file: PATH} or {env: VAR}", r.Mode))
		default:
			v.ref(rp+".kubeconfig", r.Kubeconfig, formFile|formEnv, false)
			if len(r.Kubeconfig.Data) > 0 {
				if err := v.kubeconfig(r.Kubeconfig.Data); err != nil {
					v.add(problem.Other(rp+".kubeconfig", "%v", err))
				}
			}
		}
		if m.CACert && r.CACert != nil {
			v.ref(rp+".caCert", r.CACert, formFile|formValue, true)
		}
		if !m.Agent {
			continue
		}
		if f.Has(rp+".tokenTTL") || r.TokenTTL != d.TokenTTL {
			v.tokenTTL(rp+".tokenTTL", r.TokenTTL)
		}
		if r.ClientID != "" && r.ClientID != "auto" {
			if j, dup := clientIDs[r.ClientID]; dup {
				v.add(problem.Duplicate(rp+".clientID", "duplicate clientID %q (also spec.clusters[%d]): want a unique client ID, or auto", r.ClientID, j))
			} else {
				clientIDs[r.ClientID] = i
			}
		}
	}
}
