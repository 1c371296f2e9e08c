package schema

import (
	"fmt"
	"sort"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// managers checks spec.kubefleet, spec.sveltos, spec.ocm, the host and
// selector of every Registrar (spec.argocd's own fields are argocd's),
// clusters[].identity, what each manager needs of the clusters it selects,
// and that no two objects of the fleet's managers collide on a cluster.
func (v *validator) managers() {
	f := v.f
	for i := range Registrars {
		r := &Registrars[i]
		host, sel := r.placement(&f.Spec)
		if host == nil {
			continue
		}
		p := r.Field()
		if r.Name != "argocd" { // argocd checks its selector with its other fields
			v.labels(p+".selector", "selector", sel, nil)
		}
		if *host != f.Spec.Manager.Name && v.clusterIndex(*host) < 0 {
			v.add(problem.NotFound(p+"."+r.HostField, "unknown cluster %q: want the manager (%s) or one of spec.clusters, the cluster that runs %s", *host, f.Spec.Manager.Name, r.Title))
		}
	}
	for i := range f.Spec.Clusters {
		id := f.Spec.Clusters[i].Identity
		if id == nil {
			continue
		}
		p := fmt.Sprintf("spec.clusters[%d].identity", i)
		switch {
		case id.Azure == nil:
			v.add(problem.Required(p, "identity needs azure: want azure: {principalID: GUID}, the object ID of the cluster's Entra identity"))
		case id.Azure.PrincipalID == "":
			v.add(problem.Required(p+".azure.principalID", "principalID is required: want the object (principal) ID of the cluster's Entra identity, a GUID"))
		case !guidRE.MatchString(id.Azure.PrincipalID):
			v.add(problem.InvalidValue(p+".azure.principalID", "invalid principalID %q: want a GUID, e.g. 00000000-0000-0000-0000-000000000000", id.Azure.PrincipalID))
		}
	}
	if f.Spec.KubeFleet != nil {
		for _, i := range LookupRegistrar("kubefleet").Clusters(f) {
			c := &f.Spec.Clusters[i]
			p := fmt.Sprintf("spec.clusters[%d]", i)
			if c.Identity == nil {
				v.add(problem.Required(p+".identity", "spec.kubefleet selects cluster %q, which has no identity: want identity: {azure: {principalID: GUID}}, the Entra identity its member agent authenticates to the hub as (no token goes to Git), or a spec.kubefleet.selector that leaves it out", c.Name))
			}
			if len(c.Name) > 63-len("fleet-member-") {
				v.add(problem.InvalidValue(p+".name", "cluster name %q is longer than %d characters: KubeFleet's hub makes the namespace fleet-member-<name>, at most 63; want a shorter name, or a spec.kubefleet.selector that leaves it out", c.Name, 63-len("fleet-member-")))
			}
		}
	}
	if f.Spec.Sveltos != nil {
		for _, i := range LookupRegistrar("sveltos").Clusters(f) {
			c := &f.Spec.Clusters[i]
			m := c.ModeOf()
			if m == nil || m.Kubeconfig {
				continue
			}
			why := "whose kubeconfig fleetgen does not hold"
			if c.Registration.Mode == ModeCAPI {
				why = "which Sveltos registers itself (its ClusterProfiles select cluster-api Clusters by their labels)"
			}
			v.add(problem.NotSupported(fmt.Sprintf("spec.clusters[%d].registration.mode", i), "spec.sveltos selects cluster %q of mode %s, %s: Sveltos reaches a cluster through a kubeconfig Secret; want mode %s, or a spec.sveltos.selector that leaves it out",
				c.Name, c.Registration.Mode, why, problem.OrList(modeNames(func(m *Mode) bool { return m.Kubeconfig }))))
		}
	}
	if o := f.Spec.OCM; o != nil && len(LookupRegistrar("ocm").Clusters(f)) > 0 {
		if o.Hub == f.Spec.Manager.Name {
			if f.Spec.Manager.APIServerURL == "" {
				v.add(problem.Required("spec.manager.apiServerURL", "apiServerURL is required: spec.ocm's klusterlets register with the hub (the manager) there; want https://HOST[:PORT]"))
			}
		} else if j := v.clusterIndex(o.Hub); j >= 0 {
			hub := &f.Spec.Clusters[j]
			m := hub.ModeOf()
			// A kubeconfig or apiServer.url that does not give one is reported there.
			if _, _, ok := hub.Server(); !ok && hub.APIServer == nil && (m == nil || !m.Kubeconfig) {
				v.add(problem.Required(fmt.Sprintf("spec.clusters[%d]", j), "cluster %q is spec.ocm's hub, whose API server is unknown: the klusterlets register with it there; want apiServer: {url: https://HOST[:PORT], ca: {file: PATH}}", o.Hub))
			}
		}
	}
	v.collisions()
}

// clusterIndex returns the index of the cluster called name, or -1.
func (v *validator) clusterIndex(name string) int {
	for i := range v.f.Spec.Clusters {
		if v.f.Spec.Clusters[i].Name == name {
			return i
		}
	}
	return -1
}

// systemNamespaces are namespaces a cluster has whatever fleetgen renders:
// a hub that made one of them for a cluster would delete it with the
// cluster's registration.
var systemNamespaces = []string{"default", "flux-system", "kube-node-lease", "kube-public", "kube-system"}

// placedObject is an Object on the cluster host, for the cluster at path.
type placedObject struct {
	Object
	host, cluster string
	index         int // of the cluster in spec.clusters
}

// path is the field of fleet.yaml a problem of o is placed at.
func (o *placedObject) path() string { return fmt.Sprintf("spec.clusters[%d].name", o.index) }

// collisions reports two objects of the fleet's managers that would be one
// object on one cluster (the same kind, namespace and name: one would
// overwrite the other, or a controller would adopt the wrong one), and a
// namespace a hub makes per cluster (and deletes with it) that is one
// fleetgen's objects or Kubernetes itself use there. Argo CD's Secret of a
// cluster named x-kubeconfig and Fleet's kubeconfig Secret of a manager-mode
// cluster-x are one Secret when Argo CD's namespace is Fleet's workspace.
func (v *validator) collisions() {
	f := v.f
	var objs []placedObject
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		if m := c.ModeOf(); m != nil && m.Objects != nil {
			for _, o := range m.Objects(f, c) {
				objs = append(objs, placedObject{o, f.Spec.Manager.Name, c.Name, i})
			}
		}
	}
	for ri := range Registrars {
		r := &Registrars[ri]
		host := r.Host(f)
		for _, i := range r.Clusters(f) {
			c := &f.Spec.Clusters[i]
			for _, o := range r.objects(f, c) {
				objs = append(objs, placedObject{o, host, c.Name, i})
			}
		}
	}
	seen := make(map[[4]string]int, len(objs)) // → index in objs
	used := map[[2]string]string{}             // host, namespace → what uses it
	hosts := map[string]bool{}
	for i := range objs {
		o := &objs[i]
		hosts[o.host] = true
		if o.Namespace != "" {
			if _, ok := used[[2]string{o.host, o.Namespace}]; !ok {
				used[[2]string{o.host, o.Namespace}] = o.What + " of cluster " + o.cluster + " is in it"
			}
		}
	}
	for _, ns := range systemNamespaces {
		for h := range hosts {
			used[[2]string{h, ns}] = "Kubernetes or Flux keep it"
		}
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].index < objs[j].index })
	for i := range objs {
		o := &objs[i]
		k := [4]string{o.host, o.Kind, o.Namespace, o.Name}
		if j, dup := seen[k]; dup && objs[j].cluster != o.cluster {
			prev := &objs[j]
			v.add(problem.Duplicate(o.path(), "%s %s of cluster %q would be %s of cluster %q (%s), on cluster %s: one would replace the other; want another cluster name, or the managers' objects in different namespaces",
				o.What, o.ref(), o.cluster, prev.What, prev.cluster, fmt.Sprintf("spec.clusters[%d]", prev.index), o.host))
			continue
		}
		seen[k] = i
		if o.Kind == "Namespace" && o.Made {
			if what, ok := used[[2]string{o.host, o.Name}]; ok {
				v.add(problem.Duplicate(o.path(), "%s for cluster %q is namespace %s on cluster %s, where %s: the hub would take it over and delete it with the registration; want another cluster name", o.What, o.cluster, o.Name, o.host, what))
			}
		}
	}
}
