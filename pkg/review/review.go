// Package review compares two rendered trees and says, per cluster, what a
// change does: which clusters are added, removed or changed, which fields
// moved (labels, registration, layers, images) and where a person must act.
//
// It is pure: Compare takes both trees as path -> bytes (paths relative to the
// output folder, as layout.File.Path) and reads nothing else. It parses the
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

	"fleetgen.dev/fleetgen/pkg/layout"
)

// Markers: fleetgen's words where a report shows no value. A Change that
// holds one says so (FromMarker, ToMarker), so that a value read from a tree
// that spells the same words never reads as a marker.
const (
	// GeneratedClientID is shown for a client ID that a render would generate
	// (the lock does not hold it yet: Options.GeneratedClientIDs).
	GeneratedClientID = "(generated at render)"
	// Set stands for the value of a secret or opaque field, which a report
	// never shows.
	Set = "(set)"
	// Changed stands for the new value of a secret or opaque field that moved.
	Changed = "(changed)"
	// Member is the value of clusterGroups.<group> for a cluster the group
	// selects.
	Member = "member"
)

// Kinds of cluster change.
const (
	Added   = "added"
	Removed = "removed"
	Update  = "changed"
)

// Options tunes Compare.
type Options struct {
	// GeneratedClientIDs names the clusters whose client ID a render would
	// generate (the lock lacks it): the new tree holds a placeholder there,
	// which Compare shows as the marker GeneratedClientID. What the trees
	// hold is never compared with the marker's words.
	GeneratedClientIDs []string
	// Tags gives the tag an image was pinned from, by mirror reference
	// pinned by digest ("registry/repo@sha256:…" → "1.12.0"), from the lock:
	// an image value then reads registry/repo:1.12.0@sha256:…, and the text
	// and Markdown reports show the tags beside the digests. An image whose
	// digest it lacks shows the digest alone.
	Tags map[string]string
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
	// and name, at most MaxObjects. Set by AddObjects.
	Objects []Object `json:"objects,omitempty"`
	// MoreObjects counts the objects past MaxObjects.
	MoreObjects int `json:"moreObjects,omitempty"`
}

// Object is one object a cluster receives from a layer that a change adds,
// removes or changes.
type Object struct {
	// Layer is the layer the cluster receives the object through, or ""
	// for one of an own-repo delivery's bundles (Delivery).
	Layer string `json:"layer"`
	// Delivery is the delivery whose bundle the cluster receives the object
	// from, "" for a layer's.
	Delivery   string `json:"delivery,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Change     string `json:"change"` // Added, Removed or Update
	// Changes are, for a changed object, the fields that moved
	// (FieldChanges: a JSON path, old → new; for a Secret only which
	// fields, never a value), at most MaxObjectChanges.
	Changes []Change `json:"changes,omitempty"`
	// MoreChanges counts the fields that moved past MaxObjectChanges.
	MoreChanges int `json:"moreChanges,omitempty"`
}

// Change is one field that moved; From or To is "" when the field is new or
// gone. Reports render every Change alike (field, from, to), so a new field
// needs no formatting code.
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
	// FromMarker and ToMarker say that From or To is a marker (Set, Changed,
	// GeneratedClientID, Member…), fleetgen's words where no value is
	// shown, rather than a value read from a tree.
	FromMarker bool `json:"fromMarker,omitempty"`
	ToMarker   bool `json:"toMarker,omitempty"`
}

// side is one side of a Change: a value, or a marker; the zero side is
// absent.
type side struct {
	s      string
	marker bool
}

func value(s string) side  { return side{s: s} }
func marker(s string) side { return side{s: s, marker: true} }

// changes collects Changes of the fields whose sides differ.
type changes []Change

func (ch *changes) add(field string, from, to side) {
	if from != to {
		*ch = append(*ch, Change{Field: field, From: from.s, To: to.s, FromMarker: from.marker, ToMarker: to.marker})
	}
}

// addValues is add for two values.
func (ch *changes) addValues(field, from, to string) {
	ch.add(field, value(from), value(to))
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

// Empty reports whether the trees were equal and the report lists no
// cluster (none receives other objects) and no manager change.
func (r Report) Empty() bool {
	return len(r.Clusters)+len(r.Manager.Changes) == 0 && len(r.Files.Added)+len(r.Files.Removed)+len(r.Files.Changed) == 0
}

// AddObjects records, per cluster name, the received objects a change adds,
// removes or changes (see Cluster.Objects). A cluster the report does not list
// yet is added as changed; one it lists as added or removed keeps that. An
// empty list changes nothing. Clusters stay sorted by name; each lists at
// most MaxObjects objects and counts the rest.
func (r *Report) AddObjects(byCluster map[string][]Object) {
	for _, name := range sortedKeys(byCluster) {
		objs := byCluster[name]
		if len(objs) == 0 {
			continue
		}
		r.listed(name).addObjects(objs)
	}
}

// listed returns the report's entry for cluster name, adding one as
// changed when the report does not list it yet; clusters stay sorted by
// name.
func (r *Report) listed(name string) *Cluster {
	i := sort.Search(len(r.Clusters), func(i int) bool { return r.Clusters[i].Name >= name })
	if i == len(r.Clusters) || r.Clusters[i].Name != name {
		r.Clusters = slices.Insert(r.Clusters, i, Cluster{Name: name, Change: Update, Changes: []Change{}, Warnings: []string{}})
	}
	return &r.Clusters[i]
}

// Warnings returns every warning, cluster by cluster, then the manager's.
func (r Report) Warnings() []string {
	var w []string
	for _, c := range r.Clusters {
		w = append(w, c.Warnings...)
	}
	return append(w, r.Manager.Warnings...)
}

// Compare returns what changes from old to new. old is untrusted (a previous
// render, a checkout of the published tree): nothing it holds is taken for a
// marker.
func Compare(old, new map[string][]byte, opts Options) Report {
	r := Report{
		Clusters: []Cluster{},
		Manager:  Manager{Changes: []Change{}, Warnings: []string{}},
		Files:    Files{Added: []string{}, Removed: []string{}, Changed: []string{}},
	}
	for p, o := range old {
		switch n, inNew := new[p]; {
		case !inNew:
			r.Files.Removed = append(r.Files.Removed, p)
		case !bytes.Equal(o, n):
			r.Files.Changed = append(r.Files.Changed, p)
		}
	}
	for p := range new {
		if _, inOld := old[p]; !inOld {
			r.Files.Added = append(r.Files.Added, p)
		}
	}
	slices.Sort(r.Files.Added)
	slices.Sort(r.Files.Removed)
	slices.Sort(r.Files.Changed)
	if r.Empty() {
		return r
	}
	generated := make(map[string]bool, len(opts.GeneratedClientIDs))
	for _, c := range opts.GeneratedClientIDs {
		generated[c] = true
	}
	only := r.touched()
	ot, nt := readTree(old, opts, nil, only), readTree(new, opts, generated, only)
	om, nm := ot.members(), nt.members()
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
			c.Warnings = append(c.Warnings, managerWarnings(name, oc.managers, nil)...)
		default:
			c.Change = Update
			c.Changes = compareCluster(oc, nc)
			c.Warnings = clusterWarnings(name, oc, nc)
			c.Warnings = append(c.Warnings, managerWarnings(name, oc.managers, nc.managers)...)
		}
		if c.Change != Removed {
			c.Changes = append(c.Changes, groupChanges(name, om, nm)...)
		}
		if c.Change == Update && len(c.Changes) == 0 {
			if !filesDiffer(old, new, oc.files, nc.files) {
				continue
			}
			c.Changes = append(c.Changes, Change{Field: "files", To: Changed, ToMarker: true})
		}
		r.Clusters = append(r.Clusters, c)
	}
	r.addDeliveries(ot, nt) // deliveries.go
	r.Manager.Changes = compareManager(ot.manager, nt.manager, om, nm)
	r.Manager.Warnings = append(r.Manager.Warnings, gitRepoShardWarnings(ot.manager, nt.manager)...)
	return r
}

// touched names the clusters some of whose files differ: the only ones whose
// report can change, unless a ClusterGroup or a GitRepo changed (which can
// change what holds or reaches any cluster), when it returns nil: read all.
// A fleet of 100,000 clusters with one changed is read for one.
func (r Report) touched() map[string]bool {
	only := map[string]bool{}
	for _, ps := range [][]string{r.Files.Added, r.Files.Removed, r.Files.Changed} {
		for _, p := range ps {
			lp := layout.Parse(p)
			if lp.Kind == layout.FleetGroup || lp.Kind == layout.FleetGitRepo {
				return nil
			}
			for _, c := range concerns(lp) {
				only[c] = true
			}
		}
	}
	return only
}

func compareCluster(o, n *cluster) []Change {
	var ch changes
	ch.addValues("registration.mode", o.mode, n.mode)
	for _, k := range sortedKeys(o.labels, n.labels) {
		ch.addValues("labels."+k, o.labels[k], n.labels[k])
	}
	ch.addValues(ShardField+"fleet", o.fleetShard, n.fleetShard)
	ch.addValues(ShardField+"argocd", o.argoShard, n.argoShard)
	ch.add("registration.clientID", o.clientID, n.clientID)
	ch.addValues("registration.tokenTTL", o.tokenTTL, n.tokenTTL)
	ch.add(secretChange("registration.kubeconfig", o.kubeconfig, n.kubeconfig))
	ch.add(secretChange("registration.caCert", o.ca, n.ca))
	var oa, na agentValues
	if o.agent != nil {
		oa = *o.agent
	}
	if n.agent != nil {
		na = *n.agent
	}
	ch.addValues("agent.apiServerURL", oa.APIServerURL, na.APIServerURL)
	ch.add(secretChange("agent.apiServerCA", []byte(oa.APIServerCA), []byte(na.APIServerCA)))
	ch.addValues("agent.clusterNamespace", oa.ClusterNamespace, na.ClusterNamespace)
	ch.addValues("images[fleet-agent]", agentImage(oa), agentImage(na))
	for _, name := range sortedKeys(o.layers, n.layers) {
		ol, inOld := o.layers[name]
		nl, inNew := n.layers[name]
		f := "layers." + name
		switch {
		case !inOld:
			ch.addValues(f, "", nl.Path)
		case !inNew:
			ch.addValues(f, ol.Path, "")
		default:
			ch.addValues(f+".path", ol.Path, nl.Path)
		}
		ch.addValues(f+".dependsOn", strings.Join(ol.DependsOn, ", "), strings.Join(nl.DependsOn, ", "))
		for _, k := range sortedKeys(ol.Substitute, nl.Substitute) {
			if _, isLabel := n.labels[k]; isLabel || k == "cluster" {
				continue // a label's change shows once, under labels
			}
			if _, isLabel := o.labels[k]; isLabel {
				continue
			}
			ch.addValues(f+".substitute."+k, ol.Substitute[k], nl.Substitute[k])
		}
	}
	// Images, once per cluster: the same image in several layers moves once.
	oi, ni := o.images, n.images
	for _, k := range sortedKeys(oi, ni) {
		ch.addValues("images["+k+"]", oi[k], ni[k])
	}
	compareManagers(&ch, o.managers, n.managers)
	if ch == nil {
		ch = changes{}
	}
	return ch
}

// groupChanges says which ClusterGroups start or stop selecting cluster name
// (clusterGroups.<group>: + member, or - member).
func groupChanges(name string, om, nm map[string]map[string]bool) []Change {
	var ch changes
	for _, g := range sortedKeys(om, nm) {
		was, is := side{}, side{}
		if om[g][name] {
			was = marker(Member)
		}
		if nm[g][name] {
			is = marker(Member)
		}
		ch.add("clusterGroups."+g, was, is)
	}
	return ch
}

// secretChange is how a secret or opaque field reads in a report: the
// markers Set or Changed, absent when absent; never the value. Equal sides
// give from == to.
func secretChange(field string, old, new []byte) (string, side, side) {
	state := func(b []byte) side {
		if len(b) == 0 {
			return side{}
		}
		return marker(Set)
	}
	from, to := state(old), state(new)
	if from.s != "" && to.s != "" && !bytes.Equal(old, new) {
		to = marker(Changed)
	}
	return field, from, to
}

func agentImage(v agentValues) string {
	if v.Image.Repository == "" {
		return ""
	}
	return v.Image.Repository + ":" + v.Image.Tag
}

func clusterWarnings(name string, o, n *cluster) []string {
	w := []string{}
	if o.mode != n.mode {
		w = append(w, fmt.Sprintf("%s: registration mode changed from %s to %s: the cluster registers anew; remove what the old mode installed (a fleet-agent, a kubeconfig Secret)", name, o.mode, n.mode))
	}
	if o.clientID.s != "" && o.clientID != n.clientID && n.mode == "agent" {
		w = append(w, fmt.Sprintf("%s: clientID changed: the agent installed with the old values no longer matches its Cluster; reinstall fleet-agent with %s", name, layout.AgentValues.Path(name)))
	}
	w = append(w, shardWarnings(name, o, n)...)
	if len(o.kubeconfig) > 0 && len(n.kubeconfig) > 0 && !bytes.Equal(o.kubeconfig, n.kubeconfig) {
		w = append(w, fmt.Sprintf("%s: kubeconfig changed (new credentials, or sealed for other age recipients): Fleet connects with the new Secret; check that it reaches the cluster before merging", name))
	}
	return w
}

// ShardField starts the field of a Change that moves a cluster between a
// manager's shards: "shard.fleet", "shard.argocd".
const ShardField = "shard."

// shardWarnings says what each shard move of a cluster does (SPEC §8): another
// controller takes it over.
func shardWarnings(name string, o, n *cluster) []string {
	var w []string
	switch from, to := o.fleetShard, n.fleetShard; {
	case from == to || !n.fleet:
	case from == "":
		w = append(w, fmt.Sprintf("%s: its Fleet Cluster moves to shard %s: the unsharded fleet-controller lets it go and the one started with --shard-id %s takes it over; that shard must run (the fleet chart's shards[].id) before this is merged", name, to, to))
	case to == "":
		w = append(w, fmt.Sprintf("%s: its Fleet Cluster leaves shard %s for the unsharded fleet-controller, which takes it over", name, from))
	default:
		w = append(w, fmt.Sprintf("%s: Fleet shard moved from %s to %s: the fleet-controller of shard %s takes over its Cluster (status, clean-up of its BundleDeployments); the GitRepos that deliver to it keep their own shard", name, from, to, to))
	}
	switch from, to := o.argoShard, n.argoShard; {
	case from == to:
	case from == "":
		w = append(w, fmt.Sprintf("%s: Argo CD shard set to %s: application-controller replica %s takes over its applications from whichever replica Argo CD's algorithm gave it", name, to, to))
	case to == "":
		w = append(w, fmt.Sprintf("%s: Argo CD shard %s removed: Argo CD's own algorithm chooses its application-controller replica again", name, from))
	default:
		w = append(w, fmt.Sprintf("%s: Argo CD shard moved from %s to %s: application-controller replica %s stops reconciling its applications and replica %s starts", name, from, to, from, to))
	}
	return w
}

// gitRepoShardWarnings says what moving a delivery's GitRepo between Fleet
// shards does: gitjob copies the GitRepo's labels onto the Bundles only when
// it runs, so they stay with the old shard until then.
func gitRepoShardWarnings(o, n manager) []string {
	w := []string{}
	for _, d := range sortedKeys(o.repos, n.repos) {
		from, to := o.shards[d], n.shards[d]
		if _, inOld := o.repos[d]; !inOld || from == to {
			continue
		}
		if _, inNew := n.repos[d]; !inNew {
			continue
		}
		if from == "" {
			from = "(unsharded)"
		}
		if to == "" {
			to = "(unsharded)"
		}
		w = append(w, fmt.Sprintf("delivery %s: its GitRepo moves from Fleet shard %s to %s: the gitjob of %s takes it over, but its Bundles and BundleDeployments keep the label of %s until gitjob runs again (its next commit, or a forceSyncGeneration bump): keep shard %s running until then", d, from, to, to, from, from))
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

// compareManager compares the manager's shared objects; om and nm are the
// groups' members (tree.members), whose changes it lists per group
// (groups.<group>.joined, .left).
func compareManager(o, n manager, om, nm map[string]map[string]bool) []Change {
	ch := changes{}
	for _, g := range sortedKeys(o.groups, n.groups) {
		og, inOld := o.groups[g]
		ng, inNew := n.groups[g]
		switch {
		case !inOld:
			ch.addValues("groups."+g, "", "selector "+labelString(ng.Selector))
		case !inNew:
			ch.addValues("groups."+g, "selector "+labelString(og.Selector), "")
		default:
			ch.addValues("groups."+g+".selector", labelString(og.Selector), labelString(ng.Selector))
		}
	}
	for _, g := range sortedKeys(om, nm) {
		var joined, left []string
		for _, c := range sortedKeys(nm[g]) {
			if !om[g][c] {
				joined = append(joined, c)
			}
		}
		for _, c := range sortedKeys(om[g]) {
			if !nm[g][c] {
				left = append(left, c)
			}
		}
		ch.addValues("groups."+g+".joined", "", strings.Join(joined, ", "))
		ch.addValues("groups."+g+".left", strings.Join(left, ", "), "")
	}
	for _, k := range sortedKeys(o.shards, n.shards) {
		if g, ok := strings.CutPrefix(k, "group/"); ok {
			ch.addValues("groups."+g+"."+ShardField+"fleet", o.shards[k], n.shards[k])
		} else {
			ch.addValues(DeliveriesField+k+"."+ShardField+"fleet", o.shards[k], n.shards[k])
		}
	}
	ch.addValues("verrazzano.adminCluster.server", o.adminServer, n.adminServer)
	for _, p := range sortedKeys(o.other, n.other) {
		ob, inOld := o.other[p]
		nb, inNew := n.other[p]
		switch {
		case !inOld:
			ch.add(p, side{}, marker("(added)"))
		case !inNew:
			ch.add(p, marker("(present)"), side{})
		case !bytes.Equal(ob, nb):
			ch.add(p, side{}, marker(Changed))
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

// Only returns r limited to the clusters named in keep (`--cluster`): their
// entries, the files about them (layout.ClusterOf), and, when manager is set
// (the management cluster is named), the manager's changes and its shared
// files.
func (r Report) Only(keep map[string]bool, manager bool) Report {
	out := Report{
		Clusters: []Cluster{},
		Manager:  Manager{Changes: []Change{}, Warnings: []string{}},
		Files:    Files{Added: onlyFiles(r.Files.Added, keep, manager), Removed: onlyFiles(r.Files.Removed, keep, manager), Changed: onlyFiles(r.Files.Changed, keep, manager)},
	}
	for _, c := range r.Clusters {
		if keep[c.Name] {
			out.Clusters = append(out.Clusters, c)
		}
	}
	if manager {
		out.Manager = r.Manager
	}
	return out
}

// onlyFiles keeps the paths about a cluster of keep, and with manager the
// manager's shared ones.
func onlyFiles(paths []string, keep map[string]bool, manager bool) []string {
	out := []string{}
	for _, p := range paths {
		if c := layout.ClusterOf(p); keep[c] || (c == "" && manager) {
			out = append(out, p)
		}
	}
	return out
}
