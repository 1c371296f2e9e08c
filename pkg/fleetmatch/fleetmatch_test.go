package fleetmatch

import "testing"

// The cases follow rancher/fleet v0.16's matcher tests (clustermatcher_test.go,
// bundlematch_test.go) and the code paths of target.Manager.Targets: each
// names the rule it pins.
func TestMatches(t *testing.T) {
	t.Parallel()
	prod := Group{Name: "production", Selector: map[string]string{"env": "prod"}, Labels: map[string]string{"tier": "gold"}}
	eu := Group{Name: "europe", Selector: map[string]string{"region": "eu"}}
	all := Group{Name: "all", Selector: map[string]string{}}
	none := Group{Name: "no-selector"} // a group without a selector has no member
	groups := []Group{prod, eu, all, none}
	edge := Cluster{Name: "edge-1", Labels: map[string]string{"env": "prod", "region": "eu"}}
	dev := Cluster{Name: "dev-1", Labels: map[string]string{"env": "dev", "region": "us"}}
	imported := Cluster{Name: "c-m-12345", Labels: map[string]string{DisplayNameLabel: "my-cluster"}}
	lone := Cluster{Name: "lone", Labels: map[string]string{"env": "lab"}}
	alone := []Group{prod, eu} // groups without the catch-all, for a cluster in no group

	tests := map[string]struct {
		t      Target
		c      Cluster
		groups []Group
		want   bool
	}{
		"no criterion selects nothing":              {Target{Name: "x"}, edge, groups, false},
		"name":                                      {Target{ClusterName: "edge-1"}, edge, groups, true},
		"other name":                                {Target{ClusterName: "edge-2"}, edge, groups, false},
		"display name label":                        {Target{ClusterName: "my-cluster"}, imported, groups, true},
		"resource name beside a display name":       {Target{ClusterName: "c-m-12345"}, imported, groups, true},
		"group":                                     {Target{ClusterGroup: "production"}, edge, groups, true},
		"group the cluster is not in":               {Target{ClusterGroup: "production"}, dev, groups, false},
		"group without selector has no member":      {Target{ClusterGroup: "no-selector"}, edge, groups, false},
		"empty cluster selector selects all":        {Target{ClusterSelector: map[string]string{}}, dev, groups, true},
		"cluster selector":                          {Target{ClusterSelector: map[string]string{"region": "eu"}}, edge, groups, true},
		"cluster selector, missing label":           {Target{ClusterSelector: map[string]string{"zone": ""}}, edge, groups, false},
		"AND: name and group both hold":             {Target{ClusterName: "edge-1", ClusterGroup: "europe"}, edge, groups, true},
		"AND: name holds, group does not":           {Target{ClusterName: "dev-1", ClusterGroup: "europe"}, dev, groups, false},
		"AND: group and selector on one group":      {Target{ClusterGroup: "production", ClusterSelector: map[string]string{"region": "us"}}, edge, groups, false},
		"group selector on the group's labels":      {Target{ClusterGroupSelector: map[string]string{"tier": "gold"}}, edge, groups, true},
		"group selector, AND per group":             {Target{ClusterGroup: "europe", ClusterGroupSelector: map[string]string{"tier": "gold"}}, edge, groups, false},
		"empty group selector, cluster in no group": {Target{ClusterGroupSelector: map[string]string{}}, lone, alone, true},
		"group selector, cluster in no group":       {Target{ClusterGroupSelector: map[string]string{"tier": "gold"}}, lone, alone, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tt.t.Matches(tt.c, GroupsOf(tt.c, tt.groups)); got != tt.want {
				t.Errorf("%+v matches %s = %v, want %v", tt.t, tt.c.Name, got, tt.want)
			}
		})
	}
}

func TestFirstMatchWins(t *testing.T) {
	t.Parallel()
	groups := []Group{{Name: "production", Selector: map[string]string{"env": "prod"}}}
	targets := []Target{
		{Name: "empty"},
		{Name: "eu-prod", ClusterGroup: "production", ClusterSelector: map[string]string{"region": "eu"}},
		{Name: "prod", ClusterGroup: "production"},
		{Name: "rest", ClusterSelector: map[string]string{}},
	}
	for _, tt := range []struct {
		c    Cluster
		want string
	}{
		{Cluster{Name: "a", Labels: map[string]string{"env": "prod", "region": "eu"}}, "eu-prod"},
		{Cluster{Name: "b", Labels: map[string]string{"env": "prod", "region": "us"}}, "prod"},
		{Cluster{Name: "c", Labels: map[string]string{"env": "dev"}}, "rest"},
	} {
		i := First(targets, tt.c, GroupsOf(tt.c, groups))
		if i < 0 || targets[i].Name != tt.want {
			t.Errorf("First for %s = %d, want target %s", tt.c.Name, i, tt.want)
		}
	}
	if i := First(targets[:1], Cluster{Name: "a"}, nil); i != -1 {
		t.Errorf("First over a target without criteria = %d, want -1", i)
	}
}
