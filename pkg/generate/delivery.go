package generate

import (
	"path"
	"regexp"
	"sort"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleetGitRepo is a fleet.cattle.io/v1alpha1 GitRepo.
type fleetGitRepo struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   objectMeta       `json:"metadata"`
	Spec       fleetGitRepoSpec `json:"spec"`
}

type fleetGitRepoSpec struct {
	Repo             string          `json:"repo"`
	Branch           string          `json:"branch,omitempty"`
	Revision         string          `json:"revision,omitempty"`
	Paths            []string        `json:"paths,omitempty"`
	Bundles          []gitRepoBundle `json:"bundles,omitempty"`
	Targets          []gitTarget     `json:"targets"`
	HelmSecretName   string          `json:"helmSecretName,omitempty"`
	HelmRepoURLRegex string          `json:"helmRepoURLRegex,omitempty"`
	ClientSecretName string          `json:"clientSecretName,omitempty"`
	ServiceAccount   string          `json:"serviceAccount,omitempty"`
	PollingInterval  string          `json:"pollingInterval,omitempty"`
	CorrectDrift     *correctDrift   `json:"correctDrift,omitempty"`
	TargetNamespace  string          `json:"targetNamespace,omitempty"`
	Paused           bool            `json:"paused,omitempty"`
}

type gitRepoBundle struct {
	Base    string `json:"base"`
	Options string `json:"options,omitempty"`
}

// gitTarget is a GitTarget; a selector that is set renders, {} included.
type gitTarget struct {
	Name                 string         `json:"name"`
	ClusterName          string         `json:"clusterName,omitempty"`
	ClusterSelector      *labelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string         `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *labelSelector `json:"clusterGroupSelector,omitempty"`
}

type correctDrift struct {
	Enabled         bool `json:"enabled,omitempty"`
	Force           bool `json:"force,omitempty"`
	KeepFailHistory bool `json:"keepFailHistory,omitempty"`
}

// fleetPolicy is a fleet.cattle.io/v1alpha1 Policy (its fields are
// top-level: a Policy has no spec).
type fleetPolicy struct {
	APIVersion             string         `json:"apiVersion"`
	Kind                   string         `json:"kind"`
	Metadata               objectMeta     `json:"metadata"`
	AllowedServiceAccounts []string       `json:"allowedServiceAccounts,omitempty"`
	GitRepo                *gitRepoPolicy `json:"gitRepo,omitempty"`
}

type gitRepoPolicy struct {
	AllowedClientSecretNames []string `json:"allowedClientSecretNames,omitempty"`
	AllowedRepoPatterns      []string `json:"allowedRepoPatterns,omitempty"`
}

// deliveries renders manager/fleet/gitrepos/<delivery>.yaml, one GitRepo per
// spec.deliveries entry in the manager's workspace, and
// manager/fleet/policy.yaml: the Policy that admits exactly what they use.
func (r *renderer) deliveries() []layout.File {
	f := r.f
	ds := f.Spec.Deliveries
	if len(ds) == 0 {
		return nil
	}
	ns := f.Spec.Manager.Namespace
	files := make([]layout.File, 0, len(ds)+1)
	repos, sas, secrets := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range ds {
		d := &ds[i]
		spec := fleetGitRepoSpec{
			Repo: d.Repo, Branch: d.Branch, Revision: d.Revision,
			HelmSecretName: d.HelmSecretName, HelmRepoURLRegex: d.HelmRepoURLRegex,
			ClientSecretName: d.ClientSecretName, ServiceAccount: d.ServiceAccount,
			PollingInterval: d.PollingInterval, TargetNamespace: d.TargetNamespace, Paused: d.Paused,
		}
		// Paths as Fleet's scan reads them from the repository's root: a
		// driven scan's base does not strip a leading / as the classic scan
		// does, so both are written cleaned.
		for _, p := range d.Paths {
			spec.Paths = append(spec.Paths, schema.CleanPath(p))
		}
		for _, b := range d.Bundles {
			gb := gitRepoBundle{Base: schema.CleanPath(b.Base)}
			if b.Options != "" {
				gb.Options = path.Clean(b.Options)
			}
			spec.Bundles = append(spec.Bundles, gb)
		}
		for j := range d.Targets {
			t := d.Targets[j].Match()
			gt := gitTarget{Name: t.Name, ClusterName: t.ClusterName, ClusterGroup: t.ClusterGroup}
			if t.ClusterSelector != nil {
				gt.ClusterSelector = &labelSelector{MatchLabels: t.ClusterSelector}
			}
			if t.ClusterGroupSelector != nil {
				gt.ClusterGroupSelector = &labelSelector{MatchLabels: t.ClusterGroupSelector}
			}
			spec.Targets = append(spec.Targets, gt)
		}
		if c := d.CorrectDrift; c != nil {
			spec.CorrectDrift = &correctDrift{Enabled: c.Enabled, Force: c.Force, KeepFailHistory: c.KeepFailHistory}
		}
		files = append(files, r.file(layout.FleetGitRepo.Path(d.Name), &fleetGitRepo{
			APIVersion: fleetAPIVersion, Kind: "GitRepo",
			Metadata: objectMeta{Name: d.Name, Namespace: ns, Labels: r.gitRepoLabels(d)},
			Spec:     spec,
		}, false))
		repos[regexp.QuoteMeta(d.Repo)] = true
		if d.ServiceAccount != "" {
			sas[d.ServiceAccount] = true
		}
		if d.ClientSecretName != "" {
			secrets[d.ClientSecretName] = true
		}
	}
	// Fleet anchors each pattern (^(?:…)$), so a quoted repo URL admits
	// that repository only. An empty list admits anything in Fleet's
	// Policy, so a kind no GitRepo uses gets no list (docs/deliveries.md).
	policy := &fleetPolicy{
		APIVersion: fleetAPIVersion, Kind: "Policy",
		Metadata:               objectMeta{Name: f.Metadata.Name, Namespace: ns},
		AllowedServiceAccounts: sortedSet(sas),
		GitRepo:                &gitRepoPolicy{AllowedRepoPatterns: sortedSet(repos), AllowedClientSecretNames: sortedSet(secrets)},
	}
	return append(files, r.file(layout.FleetPolicy.Path(), policy, false))
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
