package schema

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReach: what reaches each cluster of the valid-managers case, where
// first-match, AND, groups and modes all decide.
func TestReach(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "golden", "valid-managers")
	f, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{LookupEnv: caseEnv(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	r := f.Reach()
	got := map[string][]DeliveryReach{}
	for _, c := range r.Clusters {
		for i := range c.Deliveries {
			c.Deliveries[i].Why = ""
		}
		got[c.Name] = c.Deliveries
	}
	want := map[string][]DeliveryReach{
		// production and region eu: the first target; security by name.
		"prod-eu-1": {{Name: "monitoring", Target: "prod-eu"}, {Name: "security", Target: "by-name"}},
		// production, region us: the second target takes it (AND failed
		// the first), so "shadowed" (clusterName edge-7) never does.
		"edge-7": {{Name: "monitoring", Target: "prod"}},
		// in no group: the catch-all, and own's empty clusterGroupSelector
		// with clusterSelector env=dev.
		"capi-1": {{Name: "monitoring", Target: "rest"}, {Name: "own", Target: "dev"}},
		// verrazzano: not a Fleet cluster, nothing is delivered.
		"managed1": {},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deliveries per cluster (-want +got):\n%s", d)
	}
	var unmatched []string
	for _, u := range r.Unmatched {
		unmatched = append(unmatched, u.Delivery+"/"+u.Target)
	}
	if d := cmp.Diff([]string{"monitoring/shadowed", "security/empty"}, unmatched); d != "" {
		t.Errorf("unmatched targets (-want +got):\n%s", d)
	}
	if c := r.Clusters[1]; c.Name != "edge-7" || c.Mode != ModeAgent {
		t.Errorf("clusters are not in input order: %+v", c)
	}
}
