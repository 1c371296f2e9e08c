package layout

import (
	"regexp"
	"strings"
	"testing"
)

// TestParseRoundTrip: Parse reads back every path Path builds, with the
// names it was built from.
func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		want := Path{Kind: k}
		var names []string
		for _, ph := range placeholders(k) {
			switch ph.name {
			case "cluster":
				want.Cluster = "edge-7"
				names = append(names, want.Cluster)
			default:
				want.Name = "apps-1"
				names = append(names, want.Name)
			}
		}
		p := k.Path(names...)
		if strings.ContainsAny(p, "<>") {
			t.Errorf("%s.Path(%q) = %s, a placeholder left", k, names, p)
		}
		if got := Parse(p); got != want {
			t.Errorf("Parse(%s) = %+v, want %+v", p, got, want)
		}
		if !regexp.MustCompile(k.Regexp()).MatchString("out/" + p) {
			t.Errorf("%s.Regexp() = %s does not match out/%s", k, k.Regexp(), p)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]Path{
		"manager/fleet/groups/cluster.yaml":     {Kind: FleetGroup, Name: "cluster"},
		"manager/fleet/gitrepos/token.yaml":     {Kind: FleetGitRepo, Name: "token"},
		"manager/fleet/prod/kubeconfig.yaml":    {Kind: FleetKubeconfig, Cluster: "prod"},
		"clusters/prod/source.yaml":             {Kind: ClusterSource, Cluster: "prod"},
		"clusters/prod/manager.yaml":            {Kind: ManagerEntry, Cluster: "prod"},
		"clusters/prod/apps.yaml":               {Kind: Layer, Cluster: "prod", Name: "apps"},
		"manager/verrazzano/admin-cluster.yaml": {Kind: VerrazzanoAdmin},
		".sops.yaml":                            {Kind: SOPSConfig},
		// Not fleetgen's: said so, never read as the nearest kind.
		"":                                            {},
		"manager":                                     {},
		"manager/fleet/prod/other.yaml":               {},
		"manager/fleet/prod":                          {},
		"manager/argocd/prod.yml":                     {},
		"clusters/prod/apps.json":                     {},
		"clusters/prod/.yaml":                         {},
		"clusters/../apps.yaml":                       {},
		"clusters/prod/flux-system/gotk.yaml":         {},
		"agents/prod/values.yaml/x":                   {},
		"/agents/prod/values.yaml":                    {},
		"out/clusters/prod/apps.yaml":                 {},
		"manager/verrazzano/prod/vmc.yaml.bak":        {},
		"clusters/prod/":                              {},
		"clusters//apps.yaml":                         {},
		"clusters/hub/sveltos/m/kubeconfig.yaml":      {Kind: HostSveltosKubeconfig, Cluster: "hub", Name: "m"},
		"clusters/hub/sveltos/m/kubeconfig.yaml/x":    {},
		"clusters/hub/sveltos/m/x/kubeconfig.yaml/x/": {},
	} {
		if got := Parse(p); got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", p, got, want)
		}
	}
}

// TestReservedNames: a name that would put a file of one kind where the
// layout has another (a cluster called groups: manager/fleet/groups/) is
// reserved, with a reason, so that validate refuses it. A new kind whose
// literal folder a placeholder could spell fails here until it is.
func TestReservedNames(t *testing.T) {
	t.Parallel()
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	reserved := map[string]func(string) string{"cluster": ReservedCluster, "layer": ReservedLayer}
	found := map[string]bool{}
	for _, a := range kinds {
		for i, ph := range placeholders(a) {
			for _, b := range kinds {
				bs := strings.Split(string(b), "/")
				if a == b || len(bs) <= ph.at || strings.Join(bs[:ph.at], "/") != strings.Join(strings.Split(string(a), "/")[:ph.at], "/") {
					continue
				}
				v, ok := strings.CutPrefix(bs[ph.at], ph.prefix)
				if v, ok = strings.CutSuffix(v, ph.suffix); !ok || strings.Contains(bs[ph.at], "<") || !label.MatchString(v) {
					continue
				}
				found[ph.name+" "+v] = true
				names := []string{"x", "x"}
				names[i] = v
				if r := reserved[ph.name]; r == nil || r(v) == "" {
					t.Errorf("%s named %q would write %s where %s is: want it reserved", ph.name, v, a.Path(names...), b)
				}
				if p := a.Path(names...); strings.Count(string(a), "/") == len(bs)-1 && Parse(p).Kind == a {
					t.Errorf("Parse(%s) reads it as %s: want %s tried first", p, a, b)
				}
			}
		}
	}
	for name := range reservedClusters {
		if !found["cluster "+name] {
			t.Errorf("cluster name %q is reserved, but no kind's path holds it", name)
		}
	}
	if ReservedLayer("flux-system") == "" || ReservedCluster("prod") != "" || ReservedLayer("apps") != "" {
		t.Error("ReservedLayer(flux-system) empty, or prod or apps reserved")
	}
}

func TestRegexp(t *testing.T) {
	t.Parallel()
	// The creation rule .sops.yaml has always carried (pkg/secrets' golden files).
	if got, want := FleetKubeconfig.Regexp(), `(^|/)manager/fleet/[^/]+/kubeconfig\.yaml$`; got != want {
		t.Errorf("FleetKubeconfig.Regexp() = %s, want %s", got, want)
	}
	re := regexp.MustCompile(Layer.Regexp())
	for p, want := range map[string]bool{"clusters/a/b.yaml": true, "x/clusters/a/b.yaml": true, "clusters/a/bxyaml": false, "xclusters/a/b.yaml": false, "clusters/a/b/c.yaml": false} {
		if re.MatchString(p) != want {
			t.Errorf("Layer.Regexp() matches %s: %v, want %v", p, !want, want)
		}
	}
}

func TestFluxSystem(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"clusters/a/flux-system":                true,
		"clusters/a/flux-system/gotk-sync.yaml": true,
		"clusters/a/flux-system/x/y.yaml":       true,
		"clusters/a/flux-system.yaml":           false,
		"clusters/flux-system/a.yaml":           false,
		"manager/x/flux-system/a.yaml":          false,
	} {
		if FluxSystem(p) != want {
			t.Errorf("FluxSystem(%s) = %v, want %v", p, !want, want)
		}
	}
}

// placeholder is one placeholder of a Kind: its segment index, name, and
// the literal text around it in that segment.
type placeholder struct {
	at                   int
	name, prefix, suffix string
}

func placeholders(k Kind) []placeholder {
	var out []placeholder
	for i, s := range strings.Split(string(k), "/") {
		if lt, gt := strings.IndexByte(s, '<'), strings.IndexByte(s, '>'); lt >= 0 {
			out = append(out, placeholder{at: i, name: s[lt+1 : gt], prefix: s[:lt], suffix: s[gt+1:]})
		}
	}
	return out
}

// TestPlaced: a registration goes under manager/ on the manager and into the
// Flux folder of any other cluster that runs its manager, and Parse reads
// both back.
func TestPlaced(t *testing.T) {
	t.Parallel()
	for k, h := range onHost {
		if got, want := k.Placed("argo", "edge-7", true), k.Path("edge-7"); got != want {
			t.Errorf("%s.Placed on the manager = %s, want %s", k, got, want)
		}
		p := k.Placed("argo", "edge-7", false)
		if got := Parse(p); got != (Path{Kind: h, Cluster: "argo", Name: "edge-7"}) {
			t.Errorf("Parse(%s) = %+v, want %s of edge-7 in argo's folder", p, got, h)
		}
	}
	if got := FleetCluster.Placed("argo", "edge-7", false); got != FleetCluster.Path("edge-7") {
		t.Errorf("FleetCluster.Placed = %s: only registrations move", got)
	}
}

// TestClusterOf: every path names the cluster it is about; the manager's
// shared files none.
func TestClusterOf(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		FleetCluster.Path("a"):                 "a",
		FleetKubeconfig.Path("a"):              "a",
		ArgoCDCluster.Path("a"):                "a",
		HostArgoCDCluster.Path("ops", "a"):     "a", // about the member, in ops's folder
		HostSveltosKubeconfig.Path("ops", "a"): "a",
		KlusterletValues.Path("a"):             "a",
		VerrazzanoCA.Path("a"):                 "a",
		Layer.Path("a", "apps"):                "a",
		ManagerEntry.Path("manager"):           "manager",
		AgentValues.Path("a"):                  "a",
		"clusters/a/notes/x.yaml":              "a",
		"agents/a/other.yaml":                  "a",
		ManagerKustomization.Path():            "",
		FleetGroup.Path("prod"):                "",
		FleetGitRepo.Path("monitoring"):        "",
		VerrazzanoAdmin.Path():                 "",
		"clusters/../x.yaml":                   "",
		"README.md":                            "",
	} {
		if got := ClusterOf(p); got != want {
			t.Errorf("ClusterOf(%q) = %q, want %q", p, got, want)
		}
	}
}

// BenchmarkParse: review and diff parse every path of the tree, 353,343
// at 100,000 clusters.
func BenchmarkParse(b *testing.B) {
	paths := []string{"clusters/c00042/apps.yaml", "manager/fleet/c00042/cluster.yaml", "agents/c00042/values.yaml", "clusters/c00042/flux-system/gotk-sync.yaml"}
	for b.Loop() {
		for _, p := range paths {
			Parse(p)
		}
	}
}
