package review

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func clusterFile(name, labels string) []byte {
	return []byte(header + "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  labels: " + labels + "\n  name: " + name + "\nspec:\n  kubeConfigSecret: " + name + "-kubeconfig\n")
}

func gitRepo(targets string) []byte {
	return []byte(header + "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: monitoring\nspec:\n  repo: https://git.example/m.git\n  targets:\n" + targets)
}

// TestDeliveries: a cluster that a delivery starts or stops reaching, or
// reaches through another target, shows it (SPEC §7), from the GitRepos,
// Clusters and ClusterGroups of both trees, matched as Fleet matches.
func TestDeliveries(t *testing.T) {
	t.Parallel()
	base := map[string][]byte{
		"manager/fleet/groups/production.yaml": []byte(header + "apiVersion: fleet.cattle.io/v1alpha1\nkind: ClusterGroup\nmetadata:\n  name: production\nspec:\n  selector:\n    matchLabels:\n      env: prod\n"),
		"manager/fleet/a/cluster.yaml":         clusterFile("a", "{env: prod, region: eu}"),
		"manager/fleet/b/cluster.yaml":         clusterFile("b", "{env: prod, region: us}"),
		"manager/fleet/c/cluster.yaml":         clusterFile("c", "{env: dev}"),
		"manager/fleet/e/cluster.yaml":         clusterFile("e", "{env: lab}"),
	}
	old := map[string][]byte{"manager/fleet/gitrepos/monitoring.yaml": gitRepo(
		"  - name: prod-eu\n    clusterGroup: production\n    clusterSelector:\n      matchLabels:\n        region: eu\n  - name: rest\n    clusterSelector: {}\n")}
	new := map[string][]byte{"manager/fleet/gitrepos/monitoring.yaml": gitRepo(
		"  - name: prod\n    clusterGroup: production\n  - name: lab\n    clusterSelector:\n      matchLabels:\n        env: lab\n"),
		"manager/fleet/d/cluster.yaml": clusterFile("d", "{env: prod}")}
	for p, b := range base {
		old[p], new[p] = b, b
	}
	r := Compare(old, new, Options{})
	got := map[string][]Change{}
	var warnings []string
	for _, c := range r.Clusters {
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch.Field, DeliveriesField) {
				got[c.Name] = append(got[c.Name], ch)
			}
		}
		warnings = append(warnings, c.Warnings...)
	}
	want := map[string][]Change{
		"a": {{Field: "deliveries.monitoring", From: "prod-eu", To: "prod"}}, // AND no longer needed
		"b": {{Field: "deliveries.monitoring", From: "rest", To: "prod"}},    // a new first match
		"c": {{Field: "deliveries.monitoring", From: "rest", To: ""}},        // stops reaching
		"d": {{Field: "deliveries.monitoring", From: "", To: "prod"}},        // a new cluster
		// e: "rest" selected it and "lab" now does
		"e": {{Field: "deliveries.monitoring", From: "rest", To: "lab"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery changes (-want +got):\n%s", d)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "c: delivery monitoring no longer reaches it") {
		t.Errorf("warnings = %q, want one for c", warnings)
	}
	// The GitRepo is the manager's file, not a cluster called "gitrepos".
	for _, c := range r.Clusters {
		if c.Name == "gitrepos" {
			t.Errorf("manager/fleet/gitrepos/ read as a cluster: %+v", c)
		}
	}
	if r := Compare(old, old, Options{}); !r.Empty() {
		t.Errorf("an unchanged tree reports %+v", r)
	}
}
