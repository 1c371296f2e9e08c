package review

import (
	"strings"

	"sigs.k8s.io/yaml"
)

// What a rendered tree says, read with small local shapes of the upstream
// objects: per cluster, and of the manager's shared objects.

// cluster is what a tree says about one cluster.
type cluster struct {
	mode       string
	fleet      bool // has a Fleet Cluster (cluster.yaml), which ClusterGroups select
	labels     map[string]string
	clientID   side
	tokenTTL   string
	kubeconfig []byte // the Secret file; compared, never shown
	ca         []byte // the Verrazzano CA Secret file; compared, never shown
	agent      *agentValues
	layers     map[string]layer
	files      []string
}

type layer struct {
	path       string
	dependsOn  []string
	substitute map[string]string
	images     map[string]string // image name -> newName@digest (or newTag)
}

type agentValues struct {
	APIServerURL     string `json:"apiServerURL"`
	APIServerCA      string `json:"apiServerCA"`
	ClientID         string `json:"clientID"`
	ClusterNamespace string `json:"clusterNamespace"`
	TokenName        string `json:"tokenName"`
	Image            struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	} `json:"image"`
}

// manager is what a tree says about the management cluster's shared objects.
type manager struct {
	groups      map[string]fleetGroup
	adminServer string
	hasAdmin    bool
	other       map[string][]byte // every other manager file, by path
}

// fleetGroup is a ClusterGroup: its selector, as read and as shown.
type fleetGroup struct {
	selector string            // matchLabels as k=v,…
	match    map[string]string // nil: no selector, which selects nothing
}

// selects reports whether g selects c, as Fleet does: a Cluster whose labels
// hold every matchLabels pair (an empty selector selects every Cluster, a
// missing one none).
func (g fleetGroup) selects(c *cluster) bool {
	if !c.fleet || g.match == nil {
		return false
	}
	for k, v := range g.match {
		if l, ok := c.labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}

type tree struct {
	clusters map[string]*cluster
	manager  manager
}

// members returns, per group, the set of clusters it selects.
func (t tree) members() map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for g, gr := range t.manager.groups {
		for name, c := range t.clusters {
			if gr.selects(c) {
				if m[g] == nil {
					m[g] = map[string]bool{}
				}
				m[g][name] = true
			}
		}
	}
	return m
}

// Small local shapes of the upstream objects (only the fields compared).
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

type fleetCluster struct {
	Spec struct {
		ClientID         string `json:"clientID"`
		KubeConfigSecret string `json:"kubeConfigSecret"`
	} `json:"spec"`
}

type registrationToken struct {
	Spec struct {
		TTL string `json:"ttl"`
	} `json:"spec"`
}

type clusterGroup struct {
	Spec struct {
		Selector *struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

type configMap struct {
	Data map[string]string `json:"data"`
}

type kustomization struct {
	Spec struct {
		Path      string `json:"path"`
		DependsOn []struct {
			Name string `json:"name"`
		} `json:"dependsOn"`
		PostBuild struct {
			Substitute map[string]string `json:"substitute"`
		} `json:"postBuild"`
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
			Digest  string `json:"digest"`
		} `json:"images"`
	} `json:"spec"`
}

// parseTree reads a tree; generated names the clusters whose client ID is a
// placeholder for one a render would generate (only ever for the new tree).
func parseTree(files map[string][]byte, opts Options, generated map[string]bool) tree {
	t := tree{clusters: map[string]*cluster{}, manager: manager{groups: map[string]fleetGroup{}, other: map[string][]byte{}}}
	get := func(name string) *cluster {
		c := t.clusters[name]
		if c == nil {
			c = &cluster{labels: map[string]string{}, layers: map[string]layer{}}
			t.clusters[name] = c
		}
		return c
	}
	// The manager's entry point: clusters/<manager>/manager.yaml.
	managerName := ""
	for p := range files {
		if parts := strings.Split(p, "/"); len(parts) == 3 && parts[0] == "clusters" && parts[2] == "manager.yaml" {
			managerName = parts[1]
		}
	}
	for _, p := range sortedKeys(files) {
		data := files[p]
		parts := strings.Split(p, "/")
		switch {
		case len(parts) == 4 && parts[0] == "manager" && parts[1] == "fleet" && parts[2] == "groups":
			var g clusterGroup
			if yaml.Unmarshal(data, &g) == nil {
				gr := fleetGroup{}
				if sel := g.Spec.Selector; sel != nil {
					gr.match = map[string]string{}
					maps(gr.match, sel.MatchLabels)
					gr.selector = labelString(sel.MatchLabels)
				}
				t.manager.groups[strings.TrimSuffix(parts[3], ".yaml")] = gr
			}
		case len(parts) == 4 && parts[0] == "manager" && parts[1] == "fleet" && parts[2] != "gitrepos":
			c := get(parts[2])
			c.files = append(c.files, p)
			switch parts[3] {
			case "cluster.yaml":
				var o object
				var fc fleetCluster
				if yaml.Unmarshal(data, &o) == nil && yaml.Unmarshal(data, &fc) == nil {
					c.fleet = true
					maps(c.labels, o.Metadata.Labels)
					if fc.Spec.ClientID != "" {
						c.clientID = value(fc.Spec.ClientID)
						if generated[parts[2]] {
							c.clientID = marker(GeneratedClientID)
						}
					}
					if c.mode == "" {
						c.mode = "capi"
						if fc.Spec.ClientID != "" {
							c.mode = "agent"
						}
					}
				}
			case "token.yaml":
				var tok registrationToken
				if yaml.Unmarshal(data, &tok) == nil {
					c.tokenTTL = tok.Spec.TTL
				}
				c.mode = "agent"
			case "kubeconfig.yaml":
				c.kubeconfig = data
				c.mode = "manager"
			}
		case len(parts) == 4 && parts[0] == "manager" && parts[1] == "verrazzano":
			c := get(parts[2])
			c.files = append(c.files, p)
			c.mode = "verrazzano"
			if parts[3] != "vmc.yaml" {
				c.ca = append(c.ca, data...)
			}
		case len(parts) == 3 && parts[0] == "manager" && parts[1] == "verrazzano" && parts[2] == "admin-cluster.yaml":
			var cm configMap
			if yaml.Unmarshal(data, &cm) == nil {
				t.manager.adminServer, t.manager.hasAdmin = cm.Data["server"], true
			}
		case len(parts) == 3 && parts[0] == "clusters" && parts[1] != managerName:
			c := get(parts[1])
			c.files = append(c.files, p)
			var o object
			var k kustomization
			if yaml.Unmarshal(data, &o) != nil || o.Kind != "Kustomization" || yaml.Unmarshal(data, &k) != nil {
				continue
			}
			l := layer{path: k.Spec.Path, substitute: k.Spec.PostBuild.Substitute, images: map[string]string{}}
			for _, d := range k.Spec.DependsOn {
				l.dependsOn = append(l.dependsOn, d.Name)
			}
			for _, img := range k.Spec.Images {
				ref := img.NewName
				if tag := opts.Tags[img.NewName+"@"+img.Digest]; img.NewTag == "" && img.Digest != "" && tag != "" {
					ref += ":" + tag
				}
				if img.NewTag != "" {
					ref += ":" + img.NewTag
				}
				if img.Digest != "" {
					ref += "@" + img.Digest
				}
				l.images[img.Name] = ref
			}
			c.layers[o.Metadata.Name] = l
		case len(parts) == 3 && parts[0] == "agents" && parts[2] == "values.yaml":
			c := get(parts[1])
			c.files = append(c.files, p)
			var v agentValues
			if yaml.Unmarshal(data, &v) == nil {
				c.agent = &v
			}
		default:
			t.manager.other[p] = data
		}
	}
	return t
}
