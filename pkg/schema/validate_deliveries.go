package schema

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// deliveries checks spec.deliveries (SPEC §1): names, repository, ref, what
// Fleet scans, targets (known groups and clusters, valid selectors), Helm
// and Git secrets, and that each delivery reaches a cluster. A delivery from
// the fleet's own source may not take in the folder of fleet.yaml (Fleet
// would read fleetgen's input as a bundle's options) or the rendered tree
// (Fleet would deploy the manager's objects to the clusters).
func (v *validator) deliveries() {
	f := v.f
	ds := f.Spec.Deliveries
	if len(ds) == 0 {
		return
	}
	groups := map[string]bool{}
	for _, g := range f.Spec.Groups {
		groups[g.Name] = true
	}
	names := map[string]int{}
	for i := range ds {
		d := &ds[i]
		p := fmt.Sprintf("spec.deliveries[%d]", i)
		if v.name(p+".name", "delivery name", d.Name) {
			if j, dup := names[d.Name]; dup {
				v.add(problem.Duplicate(p+".name", "duplicate delivery name %q (also spec.deliveries[%d]): want unique names (each is a GitRepo of the workspace)", d.Name, j))
			} else {
				names[d.Name] = i
			}
		}
		if d.Repo == "" {
			v.add(problem.Required(p+".repo", "repo is required: want the Git URL Fleet clones, e.g. https://github.com/org/repo.git"))
		} else if why := deliveryRepo(d.Repo); why != "" {
			v.add(problem.InvalidValue(p+".repo", "invalid repo %q: %s", d.Repo, why))
		}
		if d.Branch != "" && d.Revision != "" {
			v.add(problem.Other(p+".revision", "branch and revision exclude each other (Fleet follows the branch and ignores the revision): want one"))
		}
		if len(d.Bundles) > 0 && len(d.Paths) > 0 {
			v.add(problem.Other(p+".paths", "paths and bundles exclude each other (Fleet scans only the bundles): want paths (a classic scan) or bundles (a driven scan)"))
		}
		for j, b := range d.Bundles {
			bp := fmt.Sprintf("%s.bundles[%d]", p, j)
			if b.Base == "" {
				v.add(problem.Required(bp+".base", "bundle base is required: want the bundle's folder relative to the repository's root"))
			} else if why := repoPath(b.Base); why != "" {
				v.add(problem.InvalidValue(bp+".base", "invalid base %q: %s", b.Base, why))
			}
			if b.Options != "" {
				if why := repoPath(path.Join(b.Base, b.Options)); why != "" {
					v.add(problem.InvalidValue(bp+".options", "invalid options %q: %s (options is relative to base)", b.Options, why))
				}
			}
		}
		for j, dp := range d.Paths {
			if dp == "" {
				v.add(problem.Other(fmt.Sprintf("%s.paths[%d]", p, j), "empty path: want a folder relative to the repository's root (globs allowed)"))
			} else if why := repoPath(dp); why != "" {
				v.add(problem.InvalidValue(fmt.Sprintf("%s.paths[%d]", p, j), "invalid path %q: %s", dp, why))
			} else if _, err := path.Match(dp, ""); err != nil {
				v.add(problem.InvalidValue(fmt.Sprintf("%s.paths[%d]", p, j), "invalid glob %q: want a path or a glob such as charts/*", dp))
			}
		}
		v.repoRules(p, d)
		v.ownSource(p, d)
		v.deliveryTargets(p, d, groups)
		v.subdomain(p+".helmSecretName", "secret name", d.HelmSecretName)
		if d.HelmRepoURLRegex != "" {
			if d.HelmSecretName == "" {
				v.add(problem.Other(p+".helmRepoURLRegex", "helmRepoURLRegex applies only with helmSecretName (it chooses the chart URLs that get the secret's credentials): set helmSecretName or remove it"))
			} else if _, err := regexp.Compile(d.HelmRepoURLRegex); err != nil {
				v.add(problem.InvalidValue(p+".helmRepoURLRegex", "invalid regular expression %q: want Go (RE2) syntax, e.g. ^oci://contoso\\.azurecr\\.io/", d.HelmRepoURLRegex))
			}
		}
		v.subdomain(p+".clientSecretName", "secret name", d.ClientSecretName)
		v.subdomain(p+".serviceAccount", "service account name", d.ServiceAccount)
		v.duration(p+".pollingInterval", d.PollingInterval)
		if d.TargetNamespace != "" && !isDNSLabel(d.TargetNamespace) {
			v.add(problem.InvalidValue(p+".targetNamespace", "invalid namespace %q: %s", d.TargetNamespace, wantDNSLabel))
		}
	}
	dr := f.reach()
	for i := range ds {
		reached := false
		for _, n := range dr.reached[i] {
			reached = reached || n > 0
		}
		if !reached && len(ds[i].Targets) > 0 {
			v.add(problem.Other(fmt.Sprintf("spec.deliveries[%d].targets", i), "delivery %q selects no cluster of the fleet: want a target that selects a cluster registered with Fleet (mode agent, manager or capi); `fleetgen targets` explains each target", ds[i].Name))
		}
	}
}

// deliveryTargets checks the targets of delivery d at p.
func (v *validator) deliveryTargets(p string, d *Delivery, groups map[string]bool) {
	f := v.f
	if len(d.Targets) == 0 {
		v.add(problem.Required(p+".targets", "targets are required: want at least one, e.g. {name: prod, clusterGroup: production} (Fleet would target the group \"default\")"))
		return
	}
	seen := map[string]int{}
	for j := range d.Targets {
		t := &d.Targets[j]
		tp := fmt.Sprintf("%s.targets[%d]", p, j)
		if v.name(tp+".name", "target name", t.Name) {
			if k, dup := seen[t.Name]; dup {
				v.add(problem.Duplicate(tp+".name", "duplicate target name %q (also targets[%d]): want unique names", t.Name, k))
			} else {
				seen[t.Name] = j
			}
		}
		if t.ClusterGroup != "" && !groups[t.ClusterGroup] {
			v.add(problem.NotFound(tp+".clusterGroup", "unknown group %q%s: want one of spec.groups (%s)", t.ClusterGroup, problem.DidYouMean(t.ClusterGroup, groupNames(f)), strings.Join(groupNames(f), ", ")))
		}
		if t.ClusterName != "" {
			v.targetCluster(tp+".clusterName", t.ClusterName)
		}
		v.labels(tp+".clusterSelector", "selector", t.ClusterSelector, nil)
		v.labels(tp+".clusterGroupSelector", "selector", t.ClusterGroupSelector, nil)
	}
}

// targetCluster checks that a target's clusterName names a Fleet cluster of
// the fleet, by name or by its display name label (as Fleet matches).
func (v *validator) targetCluster(p, name string) {
	var found *Cluster
	for i := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[i]
		if c.Name == name || c.Labels[fleetmatch.DisplayNameLabel] == name {
			if m := c.ModeOf(); m != nil && m.Fleet {
				return
			}
			found = c
		}
	}
	if found != nil {
		v.add(problem.Other(p, "cluster %q registers in mode %s, which is not registered with Fleet: want a cluster of mode agent, manager or capi", name, found.Registration.Mode))
		return
	}
	var all []string
	for _, c := range v.f.Spec.Clusters {
		all = append(all, c.Name)
	}
	v.add(problem.NotFound(p, "unknown cluster %q%s: want the name of one of spec.clusters", name, problem.DidYouMean(name, all)))
}

func groupNames(f *Fleet) []string {
	var out []string
	for _, g := range f.Spec.Groups {
		out = append(out, g.Name)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"(no groups)"}
	}
	return out
}

// ownSource refuses a delivery from the fleet's own source whose scan takes
// in the folder of fleet.yaml (the source root) or the rendered tree.
func (v *validator) ownSource(p string, d *Delivery) {
	f := v.f
	if !f.OwnRepo(d.Repo) {
		return
	}
	file := "fleet.yaml"
	if f.File != "" {
		file = filepath.Base(f.File)
	}
	check := func(at, scan string) {
		c := CleanPath(scan)
		if c == "." {
			v.add(problem.Other(at, "%s scans the root of the fleet's own source (repo is spec.source.url), the folder of %s: Fleet would read fleetgen's input as a bundle; want a folder below it", scan, file))
			return
		}
		for _, dir := range f.RenderedDirs() {
			if overlaps(c, dir) {
				v.add(problem.Other(at, "%s takes in %s/, fleetgen's rendered tree in the fleet's own source (repo is spec.source.url): Fleet would deploy the manager's objects to the clusters; want a folder outside it", scan, dir))
				return
			}
		}
	}
	if len(d.Bundles) == 0 && len(d.Paths) == 0 {
		v.add(problem.Other(p+".repo", "delivery %q scans the whole fleet's own source (repo is spec.source.url, and neither paths nor bundles is set), the folder of %s: Fleet would read fleetgen's input as a bundle; want paths or bundles below it", d.Name, file))
		return
	}
	for j, b := range d.Bundles {
		bp := fmt.Sprintf("%s.bundles[%d]", p, j)
		if b.Base != "" {
			check(bp+".base", b.Base)
		}
		if b.Options != "" && CleanPath(path.Join(b.Base, b.Options)) == file {
			v.add(problem.Other(bp+".options", "options %s is fleetgen's %s (repo is spec.source.url): Fleet would read it as the bundle's options; want a Fleet options file of the bundle", b.Options, file))
		}
	}
	for j, dp := range d.Paths {
		check(fmt.Sprintf("%s.paths[%d]", p, j), dp)
	}
}

// overlaps reports whether the scan pattern p (cleaned, globs allowed) and
// the folder dir (cleaned) overlap: p names dir, a folder above it or one
// below it, component by component.
func overlaps(p, dir string) bool {
	pc, dc := strings.Split(p, "/"), strings.Split(dir, "/")
	for i := 0; i < len(pc) && i < len(dc); i++ {
		if ok, _ := path.Match(pc[i], dc[i]); !ok {
			return false
		}
	}
	return true
}

// repoPath reports why p is not a path inside a repository ("" if it is).
// A leading / means the repository's root, as in Fleet.
func repoPath(p string) string {
	if strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return "want a path relative to the repository's root"
	}
	c := CleanPath(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "it leaves the repository: want a path inside it"
	}
	return ""
}

// deliveryRepo reports why raw is not a Git URL Fleet's gitjob clones ("" if
// it is one): https, http, ssh or git, or scp-style user@host:path.
func deliveryRepo(raw string) string {
	const want = "want https://, http://, ssh://, git:// or user@host:path (e.g. https://github.com/org/repo.git)"
	if !strings.Contains(raw, "://") {
		if m := scpLikeRE.FindStringSubmatch(raw); m != nil && m[1] != "" && m[3] != "" {
			return ""
		}
		return want
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return want
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
		return ""
	}
	return want
}
