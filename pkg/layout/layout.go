package layout

import (
	"regexp"
	"strings"
)

// The top-level folders of the output tree (SPEC §3), below spec.source.path
// in the published source (SPEC §6).
const (
	ManagerDir  = "manager"  // what the management cluster's Flux applies
	ClustersDir = "clusters" // each cluster's Flux entry point, the manager's too
	AgentsDir   = "agents"   // what installs each cluster's agent
)

// FluxNamespace is Flux's namespace, and ManagerKustomizationName the Flux
// Kustomization there that applies ManagerDir on the management cluster
// (the file ManagerEntry).
const (
	FluxNamespace            = "flux-system"
	ManagerKustomizationName = "manager"
)

// FluxApplied returns the labels kustomize-controller puts on every object
// the Kustomization namespace/name applies (its owner labels): what an
// object of ManagerDir carries live beside its own.
func FluxApplied(namespace, name string) map[string]string {
	return map[string]string{
		"kustomize.toolkit.fluxcd.io/name":      name,
		"kustomize.toolkit.fluxcd.io/namespace": namespace,
	}
}

// Top lists the top-level folders in the order SPEC §3 lists them.
var Top = []string{ManagerDir, ClustersDir, AgentsDir}

// Kind is one kind of file of the output tree, spelled as its path pattern:
// literal segments and placeholders <cluster>, <layer>, <group>, <delivery>,
// <member> that stand for one name each. A new kind of file (a manager's folder) is a
// new constant here and its entry in kinds; Parse and Path follow.
type Kind string

// The files fleetgen writes (SPEC §3). Foreign is every other path.
const (
	Foreign              Kind = ""
	SOPSConfig           Kind = ".sops.yaml" // creation rules, with spec.encryption (pkg/secrets)
	ManagerKustomization Kind = "manager/kustomization.yaml"
	Namespaces           Kind = "manager/namespace.yaml"
	FleetCluster         Kind = "manager/fleet/<cluster>/cluster.yaml"
	FleetKubeconfig      Kind = "manager/fleet/<cluster>/kubeconfig.yaml" // mode manager: a credential
	FleetToken           Kind = "manager/fleet/<cluster>/token.yaml"
	FleetGroup           Kind = "manager/fleet/groups/<group>.yaml"
	FleetGitRepo         Kind = "manager/fleet/gitrepos/<delivery>.yaml"
	FleetPolicy          Kind = "manager/fleet/policy.yaml"
	ArgoCDCluster        Kind = "manager/argocd/<cluster>.yaml"             // spec.argocd on the manager
	KubeFleetMember      Kind = "manager/kubefleet/<cluster>.yaml"          // spec.kubefleet, the manager its hub
	SveltosCluster       Kind = "manager/sveltos/<cluster>.yaml"            // spec.sveltos on the manager
	SveltosKubeconfig    Kind = "manager/sveltos/<cluster>/kubeconfig.yaml" // mode manager: a credential
	OCMCluster           Kind = "manager/ocm/<cluster>.yaml"                // spec.ocm, the manager its hub
	VerrazzanoCluster    Kind = "manager/verrazzano/<cluster>/vmc.yaml"
	VerrazzanoCA         Kind = "manager/verrazzano/<cluster>/ca-secret.yaml"
	VerrazzanoAdmin      Kind = "manager/verrazzano/admin-cluster.yaml"
	Layer                Kind = "clusters/<cluster>/<layer>.yaml"       // a layer's Flux Kustomization
	ClusterSource        Kind = "clusters/<cluster>/source.yaml"        // bootstrap none
	ClusterKustomization Kind = "clusters/<cluster>/kustomization.yaml" // bootstrap none
	ManagerEntry         Kind = "clusters/<cluster>/manager.yaml"       // <cluster> is the manager
	AgentValues          Kind = "agents/<cluster>/values.yaml"          // fleet-agent Helm values
	KlusterletValues     Kind = "agents/<cluster>/klusterlet.yaml"      // OCM klusterlet Helm values

	// The same registrations when a cluster of the fleet, not the manager,
	// runs the manager (spec.argocd.cluster, spec.kubefleet.hub, …): in that
	// cluster's Flux folder, <cluster>, about the cluster <member>.
	HostArgoCDCluster     Kind = "clusters/<cluster>/argocd/<member>.yaml"
	HostKubeFleetMember   Kind = "clusters/<cluster>/kubefleet/<member>.yaml"
	HostSveltosCluster    Kind = "clusters/<cluster>/sveltos/<member>.yaml"
	HostSveltosKubeconfig Kind = "clusters/<cluster>/sveltos/<member>/kubeconfig.yaml"
	HostOCMCluster        Kind = "clusters/<cluster>/ocm/<member>.yaml"
)

// kinds are what Parse recognises, in the order it tries them: of two that
// match one path, the one with a literal where the other has a placeholder
// (manager/fleet/groups/x.yaml is a group; TestReservedNames).
var kinds = []Kind{SOPSConfig, ManagerKustomization, Namespaces, FleetGroup, FleetGitRepo, FleetPolicy,
	FleetCluster, FleetKubeconfig, FleetToken, ArgoCDCluster, KubeFleetMember, SveltosCluster, SveltosKubeconfig,
	OCMCluster, VerrazzanoAdmin, VerrazzanoCluster, VerrazzanoCA,
	ClusterSource, ClusterKustomization, ManagerEntry, Layer, AgentValues, KlusterletValues,
	HostArgoCDCluster, HostKubeFleetMember, HostSveltosCluster, HostSveltosKubeconfig, HostOCMCluster}

// Path returns k's path with its placeholders replaced, in order, by names
// (FleetCluster.Path("edge-7") is manager/fleet/edge-7/cluster.yaml), which
// it does not check: they come validated, or stand for any name ("<name>").
func (k Kind) Path(names ...string) string {
	s, out := string(k), ""
	for _, n := range names {
		i, j := strings.IndexByte(s, '<'), strings.IndexByte(s, '>')
		if i < 0 || j < i {
			break
		}
		out, s = out+s[:i]+n, s[j+1:]
	}
	return out + s
}

var placeholderRE = regexp.MustCompile(`<[a-z]+>`)

// Regexp is a regular expression that matches k's paths wherever the tree
// sits (after any folder prefix), as SOPS's path_regex matches.
func (k Kind) Regexp() string {
	return "(^|/)" + placeholderRE.ReplaceAllString(regexp.QuoteMeta(string(k)), "[^/]+") + "$"
}

// ClusterDir is a cluster's Flux entry point, clusters/<name>, where
// `flux bootstrap --path` points its Flux; the manager's too, so a cluster
// may not share the manager's name (schema checks it).
func ClusterDir(name string) string { return ClustersDir + "/" + name }

// onHost pairs each registration kept under manager/ with its kind in the
// Flux folder of a cluster that runs that manager instead.
var onHost = map[Kind]Kind{
	ArgoCDCluster:     HostArgoCDCluster,
	KubeFleetMember:   HostKubeFleetMember,
	SveltosCluster:    HostSveltosCluster,
	SveltosKubeconfig: HostSveltosKubeconfig,
	OCMCluster:        HostOCMCluster,
}

// hostKinds are onHost's values: the registrations in the Flux folder of
// the cluster that runs their manager.
var hostKinds = func() map[Kind]bool {
	m := map[Kind]bool{}
	for _, h := range onHost {
		m[h] = true
	}
	return m
}()

// Placed returns the path of k, a registration file under manager/
// (ArgoCDCluster, KubeFleetMember, SveltosCluster, SveltosKubeconfig,
// OCMCluster), about cluster member, when host runs its manager: k's own
// path when host is the management cluster (onManager), else its
// counterpart in host's Flux folder (clusters/<host>/argocd/<member>.yaml).
func (k Kind) Placed(host, member string, onManager bool) string {
	if h, ok := onHost[k]; ok && !onManager {
		return h.Path(host, member)
	}
	return k.Path(member)
}

// Path is what Parse says a path is: its Kind, the cluster the file is about
// (for ManagerEntry the manager; for the Host kinds the cluster whose Flux
// folder holds it) and the layer, group, delivery or member it names.
type Path struct {
	Kind          Kind
	Cluster, Name string
}

// Parse says what the slash path p, relative to the output tree, is: a
// Kind and the names its placeholders hold, or Kind Foreign when p is not a
// path fleetgen writes. It reads the path only, never a file.
func Parse(p string) Path {
	n := strings.Count(p, "/") + 1
	if n > len(bySegments) {
		return Path{}
	}
	var buf [maxSegments]string
	segs := buf[:0]
	for range n - 1 {
		i := strings.IndexByte(p, '/')
		segs, p = append(segs, p[:i]), p[i+1:]
	}
	segs = append(segs, p)
	for _, k := range bySegments[n-1] {
		if out, ok := k.match(segs); ok {
			return out
		}
	}
	return Path{}
}

// maxSegments is the most segments a Kind has.
const maxSegments = 5

// pattern is a Kind split at its slashes: a literal segment, or a
// placeholder with what stands before and after it in the segment.
type pattern struct {
	kind Kind
	segs []segment
}

type segment struct {
	literal        string // when not a placeholder
	placeholder    bool
	cluster        bool // the placeholder is <cluster>
	prefix, suffix string
}

// bySegments holds kinds' patterns by their number of segments, less one,
// each list in kinds's order.
var bySegments = func() [maxSegments][]pattern {
	var out [maxSegments][]pattern
	for _, k := range kinds {
		var pat pattern
		pat.kind = k
		for s := range strings.SplitSeq(string(k), "/") {
			lt, gt := strings.IndexByte(s, '<'), strings.IndexByte(s, '>')
			if lt < 0 {
				pat.segs = append(pat.segs, segment{literal: s})
				continue
			}
			pat.segs = append(pat.segs, segment{placeholder: true, cluster: s[lt+1:gt] == "cluster", prefix: s[:lt], suffix: s[gt+1:]})
		}
		out[len(pat.segs)-1] = append(out[len(pat.segs)-1], pat)
	}
	return out
}()

func (pat pattern) match(segs []string) (Path, bool) {
	out := Path{Kind: pat.kind}
	for i, seg := range segs {
		s := pat.segs[i]
		if !s.placeholder {
			if seg != s.literal {
				return Path{}, false
			}
			continue
		}
		v, pre := strings.CutPrefix(seg, s.prefix)
		if v, suf := strings.CutSuffix(v, s.suffix); !pre || !suf || v == "" || v == "." || v == ".." {
			return Path{}, false
		} else if s.cluster {
			out.Cluster = v
		} else {
			out.Name = v
		}
	}
	return out, true
}

// FluxSystem reports whether the slash path p, relative to the output tree,
// is in a cluster folder's flux-system/, or is it: what `flux bootstrap` wrote
// there is Flux's, so fleetgen never writes, replaces or removes anything
// there, not even a file that carries Header (SPEC §3).
func FluxSystem(p string) bool {
	parts := strings.SplitN(p, "/", 4)
	return len(parts) >= 3 && parts[0] == ClustersDir && parts[2] == "flux-system"
}

// reservedClusters are the names of the folders beside the clusters' own in
// manager/fleet/: a cluster named so would mix its files with those there.
var reservedClusters = map[string]string{
	"groups":   "manager/fleet/groups/ holds the fleet's ClusterGroups",
	"gitrepos": "manager/fleet/gitrepos/ holds the fleet's GitRepos",
}

// reservedLayers are the layer names that would collide with what fleetgen
// or Flux puts beside a layer's file and Kustomization flux-system/<layer>.
var reservedLayers = map[string]string{
	"kustomization": "clusters/<cluster>/kustomization.yaml is the folder's kustomize entry point",
	"source":        "clusters/<cluster>/source.yaml is fleetgen's Flux source",
	"flux-system":   "the Kustomization flux-system/flux-system and the folder clusters/<cluster>/flux-system/ are Flux's own (flux bootstrap)",
	"manager":       "the Kustomization flux-system/manager and clusters/<manager>/manager.yaml are the manager's entry point",
}

// ReservedCluster says why no cluster may be called name, "" when one may.
func ReservedCluster(name string) string { return reservedClusters[name] }

// ReservedLayer says why no layer may be called name, "" when one may.
func ReservedLayer(name string) string { return reservedLayers[name] }

// ClusterOf is the cluster the slash path p, relative to the output tree, is
// about: Parse's Cluster (manager/fleet/<cluster>/…, clusters/<cluster>/…,
// agents/<cluster>/…; the manager's name for its entry point; the member for
// a registration in the folder of the cluster that runs its manager), or for a path
// fleetgen does not write the cluster folder it lies in (clusters/<name>/…,
// agents/<name>/…); "" for the manager's shared files (its kustomization,
// namespaces, groups, GitRepos, policy) and anything else. `--cluster`
// limits output to the paths of the named clusters.
func ClusterOf(p string) string {
	lp := Parse(p)
	if hostKinds[lp.Kind] {
		return lp.Name // a registration of Name in the folder of the cluster that runs its manager
	}
	if lp.Cluster != "" {
		return lp.Cluster
	}
	parts := strings.SplitN(p, "/", 3)
	if len(parts) == 3 && (parts[0] == ClustersDir || parts[0] == AgentsDir) && parts[1] != "" && parts[1] != "." && parts[1] != ".." {
		return parts[1]
	}
	return ""
}
