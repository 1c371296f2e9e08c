package review

import (
	"encoding/base64"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// ManagersField starts the field of a Change that says which cluster runs a
// manager that registers a cluster besides its mode: "managers.<manager>"
// (argocd, kubefleet, sveltos, ocm), from the old host to the new one, ""
// where it does not register the cluster. Argo CD's server adds
// "managers.argocd.server"; KubeFleet's identity "managers.kubefleet.identity".
const ManagersField = "managers."

// ApplicationsField starts the field of a Change that says an Argo CD
// Application an ApplicationSet would create on a cluster appears (To: its
// name) or disappears (From): "applications.<namespace>/<ApplicationSet>".
const ApplicationsField = "applications."

// registration is what a tree says of a cluster's registration with one
// manager: the cluster that runs the manager and the files.
type registration struct {
	host     string
	server   string // Argo CD: the Secret's server, readable (it holds no credential)
	identity string // KubeFleet: the MemberCluster's identity
	secret   []byte // Sveltos: the kubeconfig Secret's file, compared, never shown
	values   []byte // OCM: the klusterlet's values, compared, never shown
}

// registrations are the kinds of file of each manager, under manager/ and
// in another cluster's Flux folder.
var registrations = map[layout.Kind]string{
	layout.ArgoCDCluster: "argocd", layout.HostArgoCDCluster: "argocd",
	layout.KubeFleetMember: "kubefleet", layout.HostKubeFleetMember: "kubefleet",
	layout.SveltosCluster: "sveltos", layout.HostSveltosCluster: "sveltos",
	layout.SveltosKubeconfig: "sveltos", layout.HostSveltosKubeconfig: "sveltos",
	layout.OCMCluster: "ocm", layout.HostOCMCluster: "ocm",
	layout.KlusterletValues: "ocm",
}

// concerns names the clusters a file of the tree is about: the cluster of
// its path and, for a registration in another cluster's Flux folder, the
// cluster it registers (Report.touched reads only those a change concerns).
func concerns(lp layout.Path) []string {
	switch lp.Kind {
	case layout.HostArgoCDCluster, layout.HostKubeFleetMember, layout.HostSveltosCluster, layout.HostSveltosKubeconfig, layout.HostOCMCluster:
		return []string{lp.Cluster, lp.Name}
	case "":
		return nil
	}
	if lp.Cluster == "" {
		return nil
	}
	return []string{lp.Cluster}
}

// readRegistration records p, a registration file (registrations), on the
// cluster it registers; managerName is the tree's manager. It reports
// whether p is one.
func (t tree) readRegistration(lp layout.Path, p string, data []byte, managerName string) bool {
	mgr, ok := registrations[lp.Kind]
	if !ok {
		return false
	}
	member, host := lp.Cluster, managerName
	switch lp.Kind {
	case layout.HostArgoCDCluster, layout.HostKubeFleetMember, layout.HostSveltosCluster, layout.HostSveltosKubeconfig, layout.HostOCMCluster:
		member, host = lp.Name, lp.Cluster
	}
	c := t.cluster(member)
	c.files = append(c.files, p)
	if c.managers == nil {
		c.managers = map[string]*registration{}
	}
	r := c.managers[mgr]
	if r == nil {
		r = &registration{}
		c.managers[mgr] = r
	}
	var o struct {
		Data map[string]string `json:"data"`
		Spec struct {
			Identity struct{ Kind, Name string } `json:"identity"`
		} `json:"spec"`
	}
	switch lp.Kind {
	case layout.KlusterletValues:
		r.values = data
		return true // agents/: says nothing of where the hub runs
	case layout.SveltosKubeconfig, layout.HostSveltosKubeconfig:
		r.secret = data
	case layout.ArgoCDCluster, layout.HostArgoCDCluster:
		if yaml.Unmarshal(data, &o) == nil {
			if b, err := base64.StdEncoding.DecodeString(o.Data["server"]); err == nil {
				r.server = string(b)
			}
			// The application-controller replica (spec.shards.argocd).
			if b, err := base64.StdEncoding.DecodeString(o.Data["shard"]); err == nil {
				c.argoShard = string(b)
			}
		}
	case layout.KubeFleetMember, layout.HostKubeFleetMember:
		if yaml.Unmarshal(data, &o) == nil && o.Spec.Identity.Name != "" {
			r.identity = o.Spec.Identity.Kind + " " + o.Spec.Identity.Name
		}
	}
	r.host = host
	return true
}

// compareManagers lists the managers that start or stop registering a
// cluster, or move, and what a reviewer reads of each: Argo CD's server,
// KubeFleet's identity; Sveltos's kubeconfig and the klusterlet's values
// only as set or changed.
func compareManagers(ch *changes, o, n map[string]*registration) {
	for _, m := range sortedKeys(o, n) {
		var or, nr registration
		if o[m] != nil {
			or = *o[m]
		}
		if n[m] != nil {
			nr = *n[m]
		}
		f := ManagersField + m
		ch.addValues(f, or.host, nr.host)
		ch.addValues(f+".server", or.server, nr.server)
		ch.addValues(f+".identity", or.identity, nr.identity)
		ch.add(secretChange(f+".kubeconfig", or.secret, nr.secret))
		ch.add(secretChange(f+".klusterlet", or.values, nr.values))
	}
}

// managerWarnings says where a person must act when a cluster leaves a
// manager or the manager moves.
func managerWarnings(name string, o, n map[string]*registration) []string {
	var w []string
	for _, m := range sortedKeys(o, n) {
		switch {
		case o[m] != nil && n[m] == nil && o[m].host != "":
			w = append(w, fmt.Sprintf("%s: no longer registered with %s on %s: its registration is deleted there (%s)", name, m, o[m].host, leaving[m]))
		case o[m] != nil && n[m] != nil && o[m].host != "" && n[m].host != "" && o[m].host != n[m].host:
			w = append(w, fmt.Sprintf("%s: its %s registration moves from %s to %s: the old one is deleted, the new one starts afresh", name, m, o[m].host, n[m].host))
		}
	}
	return w
}

// leaving says what leaving each manager does.
var leaving = map[string]string{
	"argocd":    "Argo CD drops the cluster Secret; Applications that deploy there lose their destination",
	"kubefleet": "KubeFleet's hub removes the member and what its placements put there",
	"sveltos":   "Sveltos stops managing the cluster and removes what its profiles deployed",
	"ocm":       "OCM's hub deletes the ManagedCluster and its namespace; uninstall the klusterlet",
}

// AddApplications records, per cluster, the Argo CD Applications that
// ApplicationSets would create on it that a change adds or removes
// (ApplicationsField changes), from old to now: cluster → namespace/name of
// the ApplicationSet → Application names. A removed Application gets a
// warning: the ApplicationSet controller deletes it. A cluster the report
// does not list yet is added as changed.
func (r *Report) AddApplications(old, now map[string]map[string][]string) {
	for _, name := range sortedKeys(old, now) {
		var ch []Change
		var warn []string
		for _, set := range sortedKeys(old[name], now[name]) {
			was, is := old[name][set], now[name][set]
			for _, a := range is {
				if !slices.Contains(was, a) {
					ch = append(ch, Change{Field: ApplicationsField + set, To: a})
				}
			}
			for _, a := range was {
				if !slices.Contains(is, a) {
					ch = append(ch, Change{Field: ApplicationsField + set, From: a})
					warn = append(warn, fmt.Sprintf("%s: ApplicationSet %s no longer generates Application %s: Argo CD deletes it (and what it deployed, unless the ApplicationSet preserves resources)", name, set, a))
				}
			}
		}
		if len(ch) == 0 {
			continue
		}
		c := r.listed(name)
		c.Changes = append(c.Changes, ch...)
		if c.Change != Removed {
			c.Warnings = append(c.Warnings, warn...)
		}
	}
}

// Scope is the part of a tree that the report of the clusters of keep reads
// (Report.Only): the files that concern one of them, or no cluster (the
// manager's shared files: groups, GitRepos, the admin ConfigMap), the
// manager's entry point (it says which cluster runs the manager), and every
// Argo CD cluster Secret (an ApplicationSet can send the Applications it
// makes from one cluster's Secret to another cluster). The report of keep's
// clusters from these files alone is the one Compare makes of the whole tree.
func Scope(keep map[string]bool) func(path string) bool {
	return func(p string) bool {
		lp := layout.Parse(p)
		switch lp.Kind {
		case layout.ManagerEntry, layout.ArgoCDCluster, layout.HostArgoCDCluster:
			return true
		}
		cs := concerns(lp)
		if len(cs) == 0 {
			return true
		}
		for _, c := range cs {
			if keep[c] {
				return true
			}
		}
		return false
	}
}
