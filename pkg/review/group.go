package review

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A review of 400 clusters that get the same image bump says it once: the
// text, Markdown and GitHub reports group clusters that share a kind of
// change (added, removed, changed) and the same changes, objects and
// warnings, and write each shared item once with the list of its clusters.
// JSON stays per cluster.

// group is a set of clusters, with one kind of change, that share items.
type group struct {
	change   string   // Added, Removed or Update
	clusters []string // sorted as the report lists them
	items    []item
}

// item is one change, object or warning (the cluster's name cut from its
// start) of a cluster.
type item struct {
	change  *Change
	object  *Object
	warning string
	// moreObjects, when not 0, is the item that counts a cluster's objects
	// past MaxObjects.
	moreObjects int
}

// key identifies an item among a kind of change's items.
func (it item) key() string {
	switch {
	case it.change != nil:
		c := it.change
		return fmt.Sprintf("c\x00%s\x00%s\x00%s\x00%t\x00%t", c.Field, c.From, c.To, c.FromMarker, c.ToMarker)
	case it.object != nil:
		o := it.object
		var b strings.Builder
		b.WriteString("o\x00" + strings.Join([]string{o.Layer, o.Delivery, o.APIVersion, o.Kind, o.Namespace, o.Name, o.Change}, "\x00"))
		for _, c := range o.Changes {
			fmt.Fprintf(&b, "\x00%q\x00%q\x00%q\x00%t\x00%t", c.Field, c.From, c.To, c.FromMarker, c.ToMarker)
		}
		fmt.Fprintf(&b, "\x00%d", o.MoreChanges)
		return b.String()
	case it.moreObjects != 0:
		return fmt.Sprintf("m\x00%d", it.moreObjects)
	default:
		return "w\x00" + it.warning
	}
}

// groupClusters groups clusters: for every item, the clusters (of one kind of
// change) that have it; then items with the same clusters form a group.
// Groups go added, removed, changed; within a kind, larger groups first, then
// by first cluster. Items keep the order in which the report first lists
// them. A cluster without any item forms a group without items.
func groupClusters(clusters []Cluster) []group {
	type entry struct {
		change   string
		it       item
		clusters []string
	}
	var entries []*entry
	index := map[string]*entry{}
	add := func(c *Cluster, it item) {
		k := c.Change + "\x00" + it.key()
		e := index[k]
		if e == nil {
			e = &entry{change: c.Change, it: it}
			index[k] = e
			entries = append(entries, e)
		}
		e.clusters = append(e.clusters, c.Name)
	}
	var bare []*Cluster
	for i := range clusters {
		c := &clusters[i]
		for j := range c.Changes {
			add(c, item{change: &c.Changes[j]})
		}
		for j := range c.Objects {
			add(c, item{object: &c.Objects[j]})
		}
		if c.MoreObjects > 0 {
			add(c, item{moreObjects: c.MoreObjects})
		}
		for _, w := range c.Warnings {
			add(c, item{warning: strings.TrimPrefix(w, c.Name+": ")})
		}
		if len(c.Changes)+len(c.Objects)+len(c.Warnings)+c.MoreObjects == 0 {
			bare = append(bare, c)
		}
	}
	var groups []*group
	byClusters := map[string]*group{}
	for _, e := range entries {
		k := e.change + "\x00" + strings.Join(e.clusters, "\x00")
		g := byClusters[k]
		if g == nil {
			g = &group{change: e.change, clusters: e.clusters}
			byClusters[k] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, e.it)
	}
	for _, c := range bare {
		groups = append(groups, &group{change: c.Change, clusters: []string{c.Name}})
	}
	rank := func(change string) int {
		for i, k := range changeKinds {
			if k == change {
				return i
			}
		}
		return len(changeKinds)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if ra, rb := rank(a.change), rank(b.change); ra != rb {
			return ra < rb
		}
		if len(a.clusters) != len(b.clusters) {
			return len(a.clusters) > len(b.clusters)
		}
		return a.clusters[0] < b.clusters[0]
	})
	out := make([]group, len(groups))
	for i, g := range groups {
		out[i] = *g
	}
	return out
}

// warningGroup is one warning and the clusters that have it ("" for the
// manager's).
type warningGroup struct {
	message  string
	clusters []string
}

// groupWarnings returns every distinct warning with its clusters (the
// cluster's name cut from the start of the message), in the order the report
// first lists them, then the manager's.
func groupWarnings(r Report) []warningGroup {
	var out []warningGroup
	index := map[string]int{}
	for _, c := range r.Clusters {
		for _, w := range c.Warnings {
			m := strings.TrimPrefix(w, c.Name+": ")
			i, ok := index[m]
			if !ok {
				i = len(out)
				index[m] = i
				out = append(out, warningGroup{message: m})
			}
			out[i].clusters = append(out[i].clusters, c.Name)
		}
	}
	for _, w := range r.Manager.Warnings {
		out = append(out, warningGroup{message: w})
	}
	return out
}

// imageRef is a pinned image reference as Compare writes it:
// repository[:tag]@sha256:<hex>, with a tag and repository that need no
// quoting.
var imageRef = regexp.MustCompile(`^([a-z0-9][a-z0-9._/:-]*?)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?@(sha256:[0-9a-f]{64})$`)

// imageChange writes a change between two pinned references of the same
// repository with tags beside digests, as "1.12.0 -> 1.12.1,
// sha256:1f1262761b53… -> 5f687441399f…": "?" for a tag nobody knows, one tag
// when it stayed and the digest moved under it, each digest cut to its first
// 12 hex digits or, where the two share those, as many as tell them apart.
// code writes a tag or digest (which the pattern keeps to plain characters),
// arrow goes between old and new. Any other change is not an image change
// (false).
func imageChange(c Change, code func(string) string, arrow string) (string, bool) {
	if c.FromMarker || c.ToMarker {
		return "", false
	}
	o, n := imageRef.FindStringSubmatch(c.From), imageRef.FindStringSubmatch(c.To)
	if o == nil || n == nil || o[1] != n[1] {
		return "", false
	}
	tag := func(t string) string {
		if t == "" {
			return "?"
		}
		return code(t)
	}
	var b strings.Builder
	switch {
	case o[2] == n[2] && o[2] != "":
		b.WriteString(code(o[2]) + ", ")
	case o[2] != "" || n[2] != "":
		b.WriteString(tag(o[2]) + arrow + tag(n[2]) + ", ")
	}
	if o[3] == n[3] {
		b.WriteString(code(o[3]))
		return b.String(), true
	}
	const prefix = len("sha256:")
	cut := prefix + 12
	for cut < len(o[3]) && o[3][:cut] == n[3][:cut] {
		cut++
	}
	b.WriteString(code(o[3][:cut]) + "…" + arrow + code(n[3][prefix:cut]) + "…")
	return b.String(), true
}
