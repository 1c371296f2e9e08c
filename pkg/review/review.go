// Package review compares two rendered trees and says, per cluster, what a
// change does: which clusters are added, removed or changed, which fields
// moved (labels, registration, layers, images) and where a person must act.
//
// It is pure: Compare takes both trees as path -> bytes (paths relative to the
// output folder, as generate.File.Path) and reads nothing else. It parses the
// rendered objects with small local structs of the upstream shapes (Fleet's
// Cluster, ClusterRegistrationToken and ClusterGroup, Verrazzano's
// VerrazzanoManagedCluster, Flux's Kustomization, the fleet-agent values).
// Secret contents (kubeconfigs, CA certificates) are compared, never shown:
// a change reads "changed".
package review

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// GeneratedClientID is shown for a client ID that a render would generate
// (the lock does not hold it yet).
const GeneratedClientID = "(generated at render)"

// Set stands for the value of a secret or opaque field, which a report never
// shows.
const Set = "(set)"

// Changed stands for the new value of a secret or opaque field that moved.
const Changed = "(changed)"

// Kinds of cluster change.
const (
	Added   = "added"
	Removed = "removed"
	Update  = "changed"
)

// Options tunes Compare.
type Options struct {
	// ClientIDPlaceholder is the client ID the new tree holds where a render
	// would generate one; Compare shows it as GeneratedClientID.
	ClientIDPlaceholder string
}

// Report is what a change does to a fleet. Its JSON encoding is the shape of
// `fleetgen diff --output json` (SPEC §7).
type Report struct {
	Clusters []Cluster `json:"clusters"`
	Manager  Manager   `json:"manager"`
	Files    Files     `json:"files"`
}

// Cluster is one added, removed or changed cluster.
type Cluster struct {
	Name     string   `json:"name"`
	Change   string   `json:"change"` // Added, Removed or Update
	Changes  []Change `json:"changes"`
	Warnings []string `json:"warnings"`
	// Objects are the objects the cluster receives from its layers (the
	// layer's build with the cluster's post-build substitution, SPEC §5) that
	// the change adds, removes or changes, sorted by layer, kind, namespace
	// and name. Never their values. Set by AddObjects.
	Objects []Object `json:"objects,omitempty"`
}

// Object is one object a cluster receives from a layer that a change adds,
// removes or changes.
type Object struct {
	Layer      string `json:"layer"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Change     string `json:"change"` // Added, Removed or Update
}

// Change is one field that moved; From or To is "" when the field is new or
// gone.
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Manager holds the changes to the management cluster's shared objects:
// groups, the Verrazzano admin ConfigMap, its namespace and entry point.
type Manager struct {
	Changes  []Change `json:"changes"`
	Warnings []string `json:"warnings"`
}

// Files lists the paths that differ, sorted.
type Files struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// Empty reports whether the trees were equal and no cluster receives other
// objects.
func (r Report) Empty() bool {
	for _, c := range r.Clusters {
		if len(c.Objects) > 0 {
			return false
		}
	}
	return len(r.Files.Added)+len(r.Files.Removed)+len(r.Files.Changed) == 0
}

// AddObjects records, per cluster name, the received objects a change adds,
// removes or changes (see Cluster.Objects). A cluster the report does not list
// yet is added as changed; one it lists as added or removed keeps that. An
// empty list changes nothing. Clusters stay sorted by name.
func (r *Report) AddObjects(byCluster map[string][]Object) {
	for _, name := range sortedKeys(byCluster) {
		objs := byCluster[name]
		if len(objs) == 0 {
			continue
		}
		i := sort.Search(len(r.Clusters), func(i int) bool { return r.Clusters[i].Name >= name })
		if i == len(r.Clusters) || r.Clusters[i].Name != name {
			r.Clusters = slices.Insert(r.Clusters, i, Cluster{Name: name, Change: Update, Changes: []Change{}, Warnings: []string{}})
		}
		r.Clusters[i].Objects = append(r.Clusters[i].Objects, objs...)
		sort.SliceStable(r.Clusters[i].Objects, func(a, b int) bool {
			x, y := r.Clusters[i].Objects[a], r.Clusters[i].Objects[b]
			if x.Layer != y.Layer {
				return x.Layer < y.Layer
			}
			if x.Kind != y.Kind {
				return x.Kind < y.Kind
			}
			if x.Namespace != y.Namespace {
				return x.Namespace < y.Namespace
			}
			return x.Name < y.Name
		})
	}
}

// Warnings returns every warning, cluster by cluster, then the manager's.
func (r Report) Warnings() []string {
	var w []string
	for _, c := range r.Clusters {
		w = append(w, c.Warnings...)
	}
	return append(w, r.Manager.Warnings...)
}

// Compare returns what changes from old to new.
func Compare(old, new map[string][]byte, opts Options) Report {
	r := Report{
		Clusters: []Cluster{},
		Manager:  Manager{Changes: []Change{}, Warnings: []string{}},
		Files:    Files{Added: []string{}, Removed: []string{}, Changed: []string{}},
	}
	for _, p := range sortedKeys(old, new) {
		o, inOld := old[p]
		n, inNew := new[p]
		switch {
		case !inOld:
			r.Files.Added = append(r.Files.Added, p)
		case !inNew:
			r.Files.Removed = append(r.Files.Removed, p)
		case !bytes.Equal(o, n):
			r.Files.Changed = append(r.Files.Changed, p)
		}
	}
	if r.Empty() {
		return r
	}
	ot, nt := parseTree(old, opts), parseTree(new, opts)
	for _, name := range sortedKeys(ot.clusters, nt.clusters) {
		oc, inOld := ot.clusters[name]
		nc, inNew := nt.clusters[name]
		c := Cluster{Name: name, Changes: []Change{}, Warnings: []string{}}
		switch {
		case !inOld:
			c.Change = Added
			c.Changes = compareCluster(&cluster{}, nc)
		case !inNew:
			c.Change = Removed
			c.Changes = []Change{{Field: "registration.mode", From: oc.mode, To: ""}}
			c.Warnings = append(c.Warnings, removedWarning(name, oc.mode))
		default:
			c.Change = Update
			c.Changes = compareCluster(oc, nc)
			c.Warnings = clusterWarnings(name, oc, nc)
			if len(c.Changes) == 0 && filesDiffer(old, new, oc.files, nc.files) {
				c.Changes = append(c.Changes, Change{Field: "files", From: "", To: Changed})
			}
			if len(c.Changes) == 0 {
				continue
			}
		}
		r.Clusters = append(r.Clusters, c)
	}
	r.addDeliveries(old, new) // deliveries.go
	r.Manager.Changes = compareManager(ot.manager, nt.manager)
	return r
}

// cluster is what a tree says about one cluster.
type cluster struct {
	mode       string
	labels     map[string]string
	clientID   string
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
	groups      map[string]string // name -> selector
	adminServer string
	hasAdmin    bool
	other       map[string][]byte // every other manager file, by path
}

type tree struct {
	clusters map[string]*cluster
	manager  manager
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
		Selector struct {
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

func parseTree(files map[string][]byte, opts Options) tree {
	t := tree{clusters: map[string]*cluster{}, manager: manager{groups: map[string]string{}, other: map[string][]byte{}}}
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
				t.manager.groups[strings.TrimSuffix(parts[3], ".yaml")] = labelString(g.Spec.Selector.MatchLabels)
			}
		case len(parts) == 4 && parts[0] == "manager" && parts[1] == "fleet" && parts[2] != "gitrepos":
			c := get(parts[2])
			c.files = append(c.files, p)
			switch parts[3] {
			case "cluster.yaml":
				var o object
				var fc fleetCluster
				if yaml.Unmarshal(data, &o) == nil && yaml.Unmarshal(data, &fc) == nil {
					maps(c.labels, o.Metadata.Labels)
					c.clientID = fc.Spec.ClientID
					if c.clientID != "" && c.clientID == opts.ClientIDPlaceholder {
						c.clientID = GeneratedClientID
					}
					if c.mode == "" {
						c.mode = "capi"
						if c.clientID != "" {
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
				if v.ClientID != "" && v.ClientID == opts.ClientIDPlaceholder {
					v.ClientID = GeneratedClientID
				}
				c.agent = &v
			}
		default:
			t.manager.other[p] = data
		}
	}
	return t
}

func compareCluster(o, n *cluster) []Change {
	var ch []Change
	add := func(field, from, to string) {
		if from != to {
			ch = append(ch, Change{Field: field, From: from, To: to})
		}
	}
	add("registration.mode", o.mode, n.mode)
	for _, k := range sortedKeys(o.labels, n.labels) {
		add("labels."+k, o.labels[k], n.labels[k])
	}
	add("registration.clientID", o.clientID, n.clientID)
	add("registration.tokenTTL", o.tokenTTL, n.tokenTTL)
	add(secretChange("registration.kubeconfig", o.kubeconfig, n.kubeconfig))
	add(secretChange("registration.caCert", o.ca, n.ca))
	var oa, na agentValues
	if o.agent != nil {
		oa = *o.agent
	}
	if n.agent != nil {
		na = *n.agent
	}
	add("agent.apiServerURL", oa.APIServerURL, na.APIServerURL)
	add(secretChange("agent.apiServerCA", []byte(oa.APIServerCA), []byte(na.APIServerCA)))
	add("agent.clusterNamespace", oa.ClusterNamespace, na.ClusterNamespace)
	add("images[fleet-agent]", agentImage(oa), agentImage(na))
	for _, name := range sortedKeys(o.layers, n.layers) {
		ol, inOld := o.layers[name]
		nl, inNew := n.layers[name]
		f := "layers." + name
		switch {
		case !inOld:
			add(f, "", nl.path)
		case !inNew:
			add(f, ol.path, "")
		default:
			add(f+".path", ol.path, nl.path)
		}
		add(f+".dependsOn", strings.Join(ol.dependsOn, ", "), strings.Join(nl.dependsOn, ", "))
		for _, k := range sortedKeys(ol.substitute, nl.substitute) {
			if _, isLabel := n.labels[k]; isLabel || k == "cluster" {
				continue // a label's change shows once, under labels
			}
			if _, isLabel := o.labels[k]; isLabel {
				continue
			}
			add(f+".substitute."+k, ol.substitute[k], nl.substitute[k])
		}
	}
	// Images, once per cluster: the same image in several layers moves once.
	oi, ni := clusterImages(o), clusterImages(n)
	for _, k := range sortedKeys(oi, ni) {
		add("images["+k+"]", oi[k], ni[k])
	}
	if ch == nil {
		ch = []Change{}
	}
	return ch
}

// secretChange is how a secret or opaque field reads in a report: Set or
// Changed, "" when absent; never the value. Equal sides give from == to.
func secretChange(field string, old, new []byte) (string, string, string) {
	state := func(b []byte) string {
		if len(b) == 0 {
			return ""
		}
		return Set
	}
	from, to := state(old), state(new)
	if from != "" && to != "" && !bytes.Equal(old, new) {
		to = Changed
	}
	return field, from, to
}

func agentImage(v agentValues) string {
	if v.Image.Repository == "" {
		return ""
	}
	return v.Image.Repository + ":" + v.Image.Tag
}

func clusterImages(c *cluster) map[string]string {
	m := map[string]string{}
	for _, l := range c.layers {
		for k, v := range l.images {
			m[k] = v
		}
	}
	return m
}

func clusterWarnings(name string, o, n *cluster) []string {
	w := []string{}
	if o.mode != n.mode {
		w = append(w, fmt.Sprintf("%s: registration mode changed from %s to %s: the cluster registers anew; remove what the old mode installed (a fleet-agent, a kubeconfig Secret)", name, o.mode, n.mode))
	}
	if o.clientID != "" && o.clientID != n.clientID && n.mode == "agent" {
		w = append(w, fmt.Sprintf("%s: clientID changed: the agent installed with the old values no longer matches its Cluster; reinstall fleet-agent with agents/%s/values.yaml", name, name))
	}
	if len(o.kubeconfig) > 0 && len(n.kubeconfig) > 0 && !bytes.Equal(o.kubeconfig, n.kubeconfig) {
		w = append(w, fmt.Sprintf("%s: kubeconfig changed (new credentials, or sealed for other age recipients): Fleet connects with the new Secret; check that it reaches the cluster before merging", name))
	}
	return w
}

func removedWarning(name, mode string) string {
	switch mode {
	case "verrazzano":
		return fmt.Sprintf("%s: cluster removed: its VerrazzanoManagedCluster is deleted, so Verrazzano deregisters it, and its Flux Kustomizations are no longer published", name)
	case "agent":
		return fmt.Sprintf("%s: cluster removed: Fleet deregisters it (its Cluster and registration token are deleted; uninstall fleet-agent there), and its Flux Kustomizations are no longer published", name)
	default:
		return fmt.Sprintf("%s: cluster removed: Fleet deregisters it and its Flux Kustomizations are no longer published", name)
	}
}

func compareManager(o, n manager) []Change {
	ch := []Change{}
	add := func(field, from, to string) {
		if from != to {
			ch = append(ch, Change{Field: field, From: from, To: to})
		}
	}
	for _, g := range sortedKeys(o.groups, n.groups) {
		og, inOld := o.groups[g]
		ng, inNew := n.groups[g]
		switch {
		case !inOld:
			add("groups."+g, "", "selector "+ng)
		case !inNew:
			add("groups."+g, "selector "+og, "")
		default:
			add("groups."+g+".selector", og, ng)
		}
	}
	add("verrazzano.adminCluster.server", o.adminServer, n.adminServer)
	for _, p := range sortedKeys(o.other, n.other) {
		ob, inOld := o.other[p]
		nb, inNew := n.other[p]
		switch {
		case !inOld:
			add(p, "", "(added)")
		case !inNew:
			add(p, "(present)", "")
		case !bytes.Equal(ob, nb):
			add(p, "", Changed)
		}
	}
	return ch
}

func filesDiffer(old, new map[string][]byte, a, b []string) bool {
	for _, p := range append(append([]string(nil), a...), b...) {
		if !bytes.Equal(old[p], new[p]) {
			return true
		}
	}
	return false
}

func labelString(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func maps(dst, src map[string]string) {
	for k, v := range src {
		dst[k] = v
	}
}

func sortedKeys[V any](ms ...map[string]V) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
