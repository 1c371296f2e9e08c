package review

import (
	"maps"
	"strings"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// What a rendered tree says, read with small local shapes of the upstream
// objects: per cluster, and of the manager's shared objects.

// cluster is what a tree says about one cluster.
type cluster struct {
	mode       string
	fleet      bool              // has a Fleet Cluster (cluster.yaml), which ClusterGroups select
	labels     map[string]string // its Fleet Cluster's, but the shard label
	fleetShard string            // the Fleet Cluster's schema.FleetShardLabel
	argoShard  string            // its Argo CD Secret's shard key (readRegistration)
	clientID   side
	tokenTTL   string
	kubeconfig []byte // the Secret file; compared, never shown
	ca         []byte // the Verrazzano CA Secret file; compared, never shown
	agent      *agentValues
	layers     map[string]Kustomization
	images     map[string]string // image name -> newName@digest (or newTag), of every layer
	files      []string
	managers   map[string]*registration // by manager: Argo CD, KubeFleet, Sveltos, OCM (managers.go)
}

type agentValues struct {
	APIServerURL     string `json:"apiServerURL"`
	APIServerCA      string `json:"apiServerCA"`
	ClusterNamespace string `json:"clusterNamespace"`
	Image            struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	} `json:"image"`
}

// manager is what a tree says about the management cluster's shared objects.
type manager struct {
	groups      map[string]fleetmatch.Group    // ClusterGroups; a nil Selector selects nothing
	repos       map[string][]fleetmatch.Target // each GitRepo's targets, by delivery
	shards      map[string]string              // the shard label of each GitRepo (by delivery) and ClusterGroup ("group/"+name)
	adminServer string
	other       map[string][]byte // every other file (the manager's, Foreign ones), by path
}

type tree struct {
	clusters map[string]*cluster
	manager  manager
}

// members returns, per group, the set of Fleet Clusters it selects.
func (t tree) members() map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for g, gr := range t.manager.groups {
		for name, c := range t.clusters {
			if c.fleet && gr.Selector != nil && fleetmatch.Selects(gr.Selector, c.labels) {
				if m[g] == nil {
					m[g] = map[string]bool{}
				}
				m[g][name] = true
			}
		}
	}
	return m
}

// object is a small local shape of the upstream objects read (Fleet Cluster,
// ClusterRegistrationToken, ClusterGroup, GitRepo, ConfigMap): fields compared.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		ClientID string           `json:"clientID"`
		TTL      string           `json:"ttl"`
		Selector *matchLabelsOnly `json:"selector"`
		Targets  []struct {
			Name                 string           `json:"name"`
			ClusterName          string           `json:"clusterName"`
			ClusterGroup         string           `json:"clusterGroup"`
			ClusterSelector      *matchLabelsOnly `json:"clusterSelector"`
			ClusterGroupSelector *matchLabelsOnly `json:"clusterGroupSelector"`
		} `json:"targets"`
	} `json:"spec"`
	Data map[string]string `json:"data"`
}

// readTree reads a tree; generated names the clusters whose client ID is a
// placeholder for one a render would generate (only ever for the new tree).
// With only, the files of other clusters are left unread (Report.touched).
func readTree(files map[string][]byte, opts Options, generated, only map[string]bool) tree {
	t := tree{clusters: map[string]*cluster{}, manager: manager{groups: map[string]fleetmatch.Group{}, repos: map[string][]fleetmatch.Target{}, shards: map[string]string{}, other: map[string][]byte{}}}
	managerName := "" // the manager's entry point is clusters/<manager>/manager.yaml
	parsed := make(map[string]layout.Path, len(files))
	for p := range files {
		lp := layout.Parse(p)
		if lp.Kind == layout.ManagerEntry {
			managerName = lp.Cluster
		}
		cs := concerns(lp)
		keep := only == nil || len(cs) == 0
		for _, c := range cs {
			keep = keep || only[c]
		}
		if keep {
			parsed[p] = lp
		}
	}
	for _, p := range sortedKeys(parsed) {
		data := files[p]
		lp := parsed[p]
		var o object   // decoded by the cases that read one
		var c *cluster // the cluster p belongs to
		if t.readRegistration(lp, p, data, managerName) {
			continue
		}
		switch lp.Kind {
		case layout.FleetCluster, layout.FleetToken, layout.FleetKubeconfig, layout.VerrazzanoCluster,
			layout.VerrazzanoCA, layout.AgentValues:
			c = t.cluster(lp.Cluster)
		case layout.Layer, layout.ClusterSource, layout.ClusterKustomization, layout.ManagerEntry:
			if lp.Cluster != managerName {
				c = t.cluster(lp.Cluster)
			}
		case layout.FleetGroup:
			if yaml.Unmarshal(data, &o) == nil {
				t.manager.groups[lp.Name] = fleetmatch.Group{Name: lp.Name, Selector: o.Spec.Selector.labels(), Labels: o.Metadata.Labels}
				if s, ok := o.Metadata.Labels[schema.FleetShardLabel]; ok {
					t.manager.shards["group/"+lp.Name] = s
				}
			}
			continue
		case layout.FleetGitRepo: // compared by bytes too, below
			if yaml.Unmarshal(data, &o) == nil && o.Kind == "GitRepo" {
				ts := []fleetmatch.Target{}
				for _, t := range o.Spec.Targets {
					ts = append(ts, fleetmatch.Target{Name: t.Name, ClusterName: t.ClusterName, ClusterGroup: t.ClusterGroup,
						ClusterSelector: t.ClusterSelector.labels(), ClusterGroupSelector: t.ClusterGroupSelector.labels()})
				}
				t.manager.repos[lp.Name] = ts
				if s, ok := o.Metadata.Labels[schema.FleetShardLabel]; ok {
					t.manager.shards[lp.Name] = s
				}
			}
		case layout.VerrazzanoAdmin:
			if yaml.Unmarshal(data, &o) == nil {
				t.manager.adminServer = o.Data["server"]
			}
			continue
		}
		if c == nil {
			// The manager's other files (its kustomization, namespaces,
			// GitRepos, Policy, entry point), and Foreign
			// paths, which fleetgen does not write: each a change of its own.
			t.manager.other[p] = data
			continue
		}
		c.files = append(c.files, p)
		switch lp.Kind {
		case layout.FleetCluster:
			if yaml.Unmarshal(data, &o) == nil && o.Kind == "Cluster" {
				c.fleet = true
				c.labels = o.Metadata.Labels
				if s, ok := c.labels[schema.FleetShardLabel]; ok {
					c.fleetShard = s
					c.labels = maps.Clone(c.labels)
					delete(c.labels, schema.FleetShardLabel)
				}
				if o.Spec.ClientID != "" {
					c.clientID = value(o.Spec.ClientID)
					if generated[lp.Cluster] {
						c.clientID = marker(GeneratedClientID)
					}
				}
				if c.mode == "" {
					c.mode = "capi"
					if o.Spec.ClientID != "" {
						c.mode = "agent"
					}
				}
			}
		case layout.FleetToken:
			if yaml.Unmarshal(data, &o) == nil {
				c.tokenTTL = o.Spec.TTL
			}
			c.mode = "agent"
		case layout.FleetKubeconfig:
			c.kubeconfig = data
			c.mode = "manager"
		case layout.VerrazzanoCluster, layout.VerrazzanoCA:
			c.mode = "verrazzano"
			if lp.Kind == layout.VerrazzanoCA {
				c.ca = append(c.ca, data...)
			}
		case layout.AgentValues:
			var v agentValues
			if yaml.Unmarshal(data, &v) == nil {
				c.agent = &v
			}
		case layout.Layer:
			k, ok := ReadLayer(lp, data)
			if !ok {
				continue
			}
			c.layers[lp.Name] = k
			for _, img := range k.Images { // with the tag it was pinned from, when opts.Tags knows it
				ref := img.NewName
				if tag := opts.Tags[img.NewName+"@"+img.Digest]; img.NewTag == "" && img.Digest != "" && tag != "" {
					img.NewTag = tag
				}
				if img.NewTag != "" {
					ref += ":" + img.NewTag
				}
				if img.Digest != "" {
					ref += "@" + img.Digest
				}
				c.images[img.Name] = ref
			}
		}
	}
	return t
}

// cluster returns what t says about the cluster name, adding it.
func (t tree) cluster(name string) *cluster {
	c := t.clusters[name]
	if c == nil {
		c = &cluster{layers: map[string]Kustomization{}, images: map[string]string{}}
		t.clusters[name] = c
	}
	return c
}

// Kustomization is what diff reads back of a layer file: the fields of the
// Flux Kustomization fleetgen renders for one layer of one cluster.
type Kustomization struct {
	Path       string            // spec.path: the layer's folder in the source ("./apps/prod")
	DependsOn  []string          // spec.dependsOn names
	Substitute map[string]string // spec.postBuild.substitute
	Images     []Image           // spec.images
}

// Image is one spec.images entry of a Kustomization.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// ReadLayer reads the file data at p: ok only when p is a layout.Layer path
// and data the Flux Kustomization fleetgen writes there (kind Kustomization of
// kustomize.toolkit.fluxcd.io, named after the file). data may come from an
// untrusted tree (DIR): it is decoded, never followed.
func ReadLayer(p layout.Path, data []byte) (k Kustomization, ok bool) {
	var doc struct { // keys match field names case-insensitively (encoding/json)
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Path      string
			DependsOn []struct{ Name string }
			PostBuild struct{ Substitute map[string]string }
			Images    []Image
		}
	}
	if p.Kind != layout.Layer || yaml.Unmarshal(data, &doc) != nil || doc.Kind != "Kustomization" ||
		!strings.HasPrefix(doc.APIVersion, "kustomize.toolkit.fluxcd.io/") || doc.Metadata.Name != p.Name {
		return k, false
	}
	k = Kustomization{Path: doc.Spec.Path, Substitute: doc.Spec.PostBuild.Substitute, Images: doc.Spec.Images}
	for _, d := range doc.Spec.DependsOn {
		k.DependsOn = append(k.DependsOn, d.Name)
	}
	return k, true
}
