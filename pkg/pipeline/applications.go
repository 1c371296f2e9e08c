package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/appset"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// ApplicationSetPreview is one ApplicationSet in what the cluster that runs
// Argo CD receives, previewed against every cluster Secret that Argo CD
// holds there (package appset): the Applications it would create, what
// fleetgen does not evaluate and what Argo CD would refuse. Its names come
// from a layer, untrusted: printed through package inert.
type ApplicationSetPreview struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Cluster runs Argo CD and receives the ApplicationSet from Layer, in
	// the file Origin (relative to the folder of fleet.yaml).
	Cluster string `json:"cluster"`
	Layer   string `json:"layer"`
	Origin  string `json:"file"`
	appset.Preview

	layerIndex int // in spec.layers, where warnings point
}

// Ref is the ApplicationSet's namespace/name.
func (p *ApplicationSetPreview) Ref() string { return p.Namespace + "/" + p.Name }

// argoCDView is what one Argo CD sees: its cluster Secrets and the
// ApplicationSets its cluster receives.
type argoCDView struct {
	host      string // the cluster that runs it
	namespace string // Argo CD's namespace
	clusters  []appset.Cluster
	sets      []receivedSet
	sealed    []string // cluster Secrets a layer gives in SOPS ciphertext
	// unreadable is set when a rendered cluster Secret could not be read
	// (a tree of an older fleetgen sealed them).
	unreadable bool
}

// receivedSet is an ApplicationSet the Argo CD cluster receives, and from
// which layer (index in spec.layers; -1 for an old tree's layer).
type receivedSet struct {
	obj        *layers.Object
	layer      string
	layerIndex int
}

// argoCDSees collects, for f's Argo CD, every cluster Secret fleetgen
// renders (registrations: generate.Registrations' files, or a rendered
// tree's) and every object the cluster that runs Argo CD receives through
// its layers (m's closure: the Kustomizations they lead to too): the cluster
// Secrets in Argo CD's namespace and the ApplicationSets. Without spec.argocd, or when the manager runs Argo CD
// (it receives no layer), there is no ApplicationSet.
func argoCDSees(f *schema.Fleet, m *layers.Model, registrations map[string][]byte) argoCDView {
	a := f.Spec.ArgoCD
	if a == nil {
		return argoCDView{}
	}
	v := argoCDView{host: schema.LookupRegistrar("argocd").Host(f), namespace: a.Namespace}
	v.addSecrets(registrations)
	if m == nil {
		return v
	}
	for i, l := range f.Spec.Layers {
		for ci := range f.Spec.Clusters {
			if c := &f.Spec.Clusters[ci]; c.Name == v.host && schema.Selects(l.Selector, c.Labels) {
				for _, s := range m.Closure(c.Name, l.Name) {
					v.addReceived(s, l.Name, i)
				}
			}
		}
	}
	return v
}

// addSecrets adds the Argo CD cluster Secrets among files (a tree, by
// path), in path order, and returns where each was.
func (v *argoCDView) addSecrets(files map[string][]byte) []layout.Path {
	found := map[string]layout.Path{}
	for p := range files {
		if lp := layout.Parse(p); lp.Kind == layout.ArgoCDCluster || lp.Kind == layout.HostArgoCDCluster {
			found[p] = lp
		}
	}
	paths := slices.Sorted(maps.Keys(found))
	for _, p := range paths {
		var obj map[string]any
		c, ok := appset.Cluster{}, false
		if yaml.Unmarshal(files[p], &obj) == nil {
			c, ok, _ = appset.ClusterFromSecret(obj)
		}
		if !ok {
			v.unreadable = true
			continue
		}
		v.clusters = append(v.clusters, c)
	}
	out := make([]layout.Path, len(paths))
	for i, p := range paths {
		out[i] = found[p]
	}
	return out
}

// addReceived adds what s, received from layer, holds: ApplicationSets and
// cluster Secrets in Argo CD's namespace.
func (v *argoCDView) addReceived(s *layers.Set, layer string, layerIndex int) {
	if s == nil {
		return
	}
	for _, o := range s.Objects {
		switch {
		case o.Kind == "ApplicationSet" && strings.HasPrefix(o.APIVersion, "argoproj.io/"):
			v.sets = append(v.sets, receivedSet{obj: o, layer: layer, layerIndex: layerIndex})
		case o.Kind == "Secret" && o.Namespace == v.namespace:
			c, ok, sealed := appset.ClusterFromSecret(o.Map())
			if ok {
				v.clusters = append(v.clusters, c)
			} else if sealed {
				v.sealed = append(v.sealed, fmt.Sprintf("layer %s: %s (Secret %s)", layer, inert.Quote(o.Origin), inert.Quote(o.Namespace+"/"+o.Name)))
			}
		}
	}
}

// preview evaluates every ApplicationSet v holds, sorted by namespace and
// name.
func (v argoCDView) preview() []ApplicationSetPreview {
	out := make([]ApplicationSetPreview, 0, len(v.sets))
	for _, s := range v.sets {
		o := s.obj
		out = append(out, ApplicationSetPreview{Namespace: o.Namespace, Name: o.Name, Cluster: v.host, Layer: s.layer, Origin: o.Origin,
			Preview: appset.Evaluate(o.Map(), v.clusters), layerIndex: s.layerIndex})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ref() < out[j].Ref() })
	return out
}

// byDestination returns, per fleet cluster, the Applications the previews
// create on it: the cluster whose Argo CD Secret names the Application's
// destination (by name or server), or the cluster that runs Argo CD for
// its in-cluster destination. An Application whose destination is no
// cluster of the fleet is left out (the preview lists it).
func (v argoCDView) byDestination(previews []ApplicationSetPreview) map[string][]schema.ApplicationReach {
	byName, byServer := map[string]string{}, map[string]string{}
	for _, c := range v.clusters {
		byName[c.Name], byServer[c.Server] = c.Name, c.Name
	}
	byName[appset.InClusterName], byServer[appset.InClusterServer] = v.host, v.host
	out := map[string][]schema.ApplicationReach{}
	for _, p := range previews {
		for _, a := range p.Applications {
			cluster := byServer[a.Server]
			if a.Server == "" {
				cluster = byName[a.DestinationName]
			}
			if cluster == "" {
				continue
			}
			out[cluster] = append(out[cluster], schema.ApplicationReach{ApplicationSet: p.Ref(), Name: a.Name, Project: a.Project, Namespace: a.DestinationNamespace})
		}
	}
	return out
}

// applicationWarnings are the warnings of the previews (SPEC §1: an
// ApplicationSet whose generator fleetgen cannot evaluate is named, never
// skipped in silence), each at the layer that gives the ApplicationSet:
// what is not evaluated, what Argo CD would refuse, and cluster Secrets a
// layer seals, which the preview cannot read.
func (v argoCDView) applicationWarnings(f *schema.Fleet, previews []ApplicationSetPreview) problem.Errors {
	var ws problem.Errors
	for _, p := range previews {
		at := fmt.Sprintf("spec.layers[%d]", p.layerIndex)
		what := fmt.Sprintf("layer %s: %s (ApplicationSet %s)", p.Layer, inert.Quote(p.Origin), inert.Quote(p.Ref()))
		for _, n := range p.NotEvaluated {
			ws = append(ws, f.At(problem.NotEvaluated(at, "%s: %s; targets and diff do not show what it creates", what, inert.Prose(n))))
		}
		for _, n := range p.Errors {
			ws = append(ws, f.At(problem.ApplicationSetRefused(at, "%s: Argo CD would refuse it on cluster %s: %s", what, v.host, inert.Prose(n))))
		}
	}
	for _, s := range v.sealed {
		ws = append(ws, f.At(problem.NotEvaluated("spec.argocd", "%s is an Argo CD cluster Secret whose name and server are SOPS-encrypted: the ApplicationSet preview cannot see that cluster", s)))
	}
	return ws
}

// registrationFiles renders f's registrations (generate.Registrations) as
// path → bytes.
func registrationFiles(f *schema.Fleet) (map[string][]byte, error) {
	files, err := generate.Registrations(f)
	if err != nil {
		return nil, err
	}
	return filesMap(files), nil
}

// warnings are schema.Warnings, what the model of what each cluster
// receives could not follow (layers.Model.Warnings), those of the
// ApplicationSets the cluster that runs Argo CD receives
// (applicationWarnings), the shards' loads (shard.Plan.Warnings) and the
// bundle images fleetgen cannot pin (bundleImageWarnings), in document
// order.
func (ld *Loaded) warnings() problem.Errors {
	ws := append(schema.Warnings(ld.Fleet), ld.Model.Warnings(ld.Fleet)...)
	ws = append(ws, ld.applicationWarnings()...)
	ws = append(ws, ld.bundleImageWarnings()...)
	if !ld.lockBad {
		ws = append(ws, ld.shardPlan().Warnings(ld.Fleet)...)
	}
	ws.Sort()
	return ws
}

// applicationWarnings are the warnings of the ApplicationSets the cluster
// that runs Argo CD receives (argoCDView.applicationWarnings).
func (ld *Loaded) applicationWarnings() problem.Errors {
	if ld.Fleet.Spec.ArgoCD == nil {
		return nil
	}
	regs, err := registrationFiles(ld.Fleet)
	if err != nil {
		return nil // Render reports it
	}
	v := argoCDSees(ld.Fleet, ld.Model, regs)
	return v.applicationWarnings(ld.Fleet, v.preview())
}

// oldArgoCD is what the Argo CD of DIR's tree saw (had): the cluster Secrets
// DIR holds, on the cluster they went to, and the ApplicationSets that
// cluster received from DIR's layer folders (old) or, when DIR holds none
// (a previous render, not a checkout), those it receives now (now's): the
// preview then shows what the change does to the clusters alone. ok is false
// when DIR's Secrets cannot be read (an older fleetgen sealed them): there
// is nothing to compare.
func oldArgoCD(f *schema.Fleet, had map[string][]byte, old *oldModel, now argoCDView) (argoCDView, bool) {
	v := argoCDView{namespace: now.namespace}
	for _, lp := range v.addSecrets(had) {
		if v.host = f.Spec.Manager.Name; lp.Kind == layout.HostArgoCDCluster {
			v.host = lp.Cluster
		}
	}
	if v.unreadable || now.unreadable {
		return v, false
	}
	if v.namespace == "" {
		v.namespace = "argocd"
	}
	if old == nil || old.model == nil {
		if v.host == now.host {
			v.sets = now.sets
		}
		return v, true
	}
	for _, u := range old.units {
		if u.Cluster == v.host {
			for _, s := range old.model.Closure(u.Cluster, u.Layer) {
				v.addReceived(s, u.Layer, -1)
			}
		}
	}
	return v, true
}

// applicationNames lists what v's ApplicationSets would create, per
// cluster and ApplicationSet (namespace/name), for review.AddApplications.
func applicationNames(v argoCDView) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for cluster, apps := range v.byDestination(v.preview()) {
		for _, a := range apps {
			if out[cluster] == nil {
				out[cluster] = map[string][]string{}
			}
			out[cluster][a.ApplicationSet] = append(out[cluster][a.ApplicationSet], a.Name)
		}
	}
	return out
}
