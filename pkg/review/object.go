package review

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bounds of what a report holds about received objects (SPEC §7), in every
// format: objects and fields past them are counted, not listed.
const (
	// MaxObjectChanges is how many fields that moved an Object lists
	// (Object.MoreChanges counts the rest).
	MaxObjectChanges = 100
	// MaxObjects is how many objects a Cluster lists (Cluster.MoreObjects
	// counts the rest).
	MaxObjects = 100
)

// FieldChanges returns the fields that moved from old to new, two versions
// of one object (plain JSON values, as a build decodes them), as kubectl
// diff would show them, at most MaxObjectChanges of them, and how many more
// moved. Each field is a JSON path (spec.replicas,
// metadata.labels["app.kubernetes.io/name"]); a list whose items all have a
// distinct name (containers, volumes, env, ports…: where Kubernetes merges by
// name) is keyed by it (spec.template.spec.containers[name=app].image),
// another by index. A value that is added or removed whole is listed leaf
// by leaf. Leaves read as JSON scalars: a string as it is, 3, true, null,
// {} or [] for an empty object or list.
//
// For a Secret (kind Secret, whatever its group) no value is shown, only the
// fields that moved (data.password: (set) → (changed)): its data, its
// stringData, and any annotation that copies them.
func FieldChanges(kind string, old, new map[string]any) ([]Change, int) {
	d := fieldDiff{secret: kind == "Secret"}
	d.walk("", old, new, true, true)
	return d.out, d.more
}

type fieldDiff struct {
	secret bool
	out    []Change
	more   int
}

func (d *fieldDiff) add(path string, from, to any, hasFrom, hasTo bool) {
	if len(d.out) == MaxObjectChanges {
		d.more++
		return
	}
	c := Change{Field: path}
	switch {
	case d.secret:
		if hasFrom {
			c.From, c.FromMarker = Set, true
		}
		if hasTo {
			c.To, c.ToMarker = Set, true
			if hasFrom {
				c.To = Changed
			}
		}
	default:
		if hasFrom {
			c.From = scalar(from)
		}
		if hasTo {
			c.To = scalar(to)
		}
	}
	d.out = append(d.out, c)
}

// walk compares a and b at path; hasA and hasB say whether each side holds
// a value there (a JSON null is a value).
func (d *fieldDiff) walk(path string, a, b any, hasA, hasB bool) {
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	al, aList := a.([]any)
	bl, bList := b.([]any)
	switch {
	case hasA && hasB && aMap && bMap:
		for _, k := range sortedKeys(am, bm) {
			av, inA := am[k]
			bv, inB := bm[k]
			d.walk(joinKey(path, k), av, bv, inA, inB)
		}
	case hasA && hasB && aList && bList:
		d.list(path, al, bl)
	case hasA && hasB && !aMap && !bMap && !aList && !bList:
		if !equalScalar(a, b) {
			d.add(path, a, b, true, true)
		}
	default:
		// One side absent, or the kind of value changed: the old leaves
		// go, the new ones come.
		if hasA {
			d.leaves(path, a, true)
		}
		if hasB {
			d.leaves(path, b, false)
		}
	}
}

// leaves lists every leaf of v as removed (old) or added.
func (d *fieldDiff) leaves(path string, v any, old bool) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for _, k := range sortedKeys(m) {
			d.leaves(joinKey(path, k), m[k], old)
		}
		return
	}
	if l, ok := v.([]any); ok && len(l) > 0 {
		keys := listKeys(l)
		for i, item := range l {
			d.leaves(path+itemKey(keys, i), item, old)
		}
		return
	}
	if old {
		d.add(path, v, nil, true, false)
	} else {
		d.add(path, nil, v, false, true)
	}
}

// list compares two lists: by name when every item of both is an object with
// a distinct string name, else by index.
func (d *fieldDiff) list(path string, a, b []any) {
	ka, kb := listKeys(a), listKeys(b)
	if ka == nil || kb == nil {
		for i := range max(len(a), len(b)) {
			var av, bv any
			if i < len(a) {
				av = a[i]
			}
			if i < len(b) {
				bv = b[i]
			}
			d.walk(fmt.Sprintf("%s[%d]", path, i), av, bv, i < len(a), i < len(b))
		}
		return
	}
	byName := make(map[string]int, len(a))
	for i, k := range ka {
		byName[k] = i
	}
	seen := make(map[string]bool, len(b))
	for j, k := range kb {
		seen[k] = true
		if i, ok := byName[k]; ok {
			d.walk(path+nameKey(k), a[i], b[j], true, true)
		} else {
			d.walk(path+nameKey(k), nil, b[j], false, true)
		}
	}
	for i, k := range ka {
		if !seen[k] {
			d.walk(path+nameKey(k), a[i], nil, true, false)
		}
	}
}

// listKeys returns the names of l's items when every item is an object
// with a string name, distinct within l (an empty list has none to clash);
// nil otherwise.
func listKeys(l []any) []string {
	out := make([]string, len(l))
	seen := make(map[string]bool, len(l))
	for i, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := m["name"].(string)
		if !ok || seen[n] {
			return nil
		}
		seen[n] = true
		out[i] = n
	}
	return out
}

// itemKey is the path element of item i of a list whose names are keys
// (nil: by index).
func itemKey(keys []string, i int) string {
	if keys == nil {
		return fmt.Sprintf("[%d]", i)
	}
	return nameKey(keys[i])
}

// plainKey matches a key written as .key; bracketKey one written [key]
// (metadata.labels[app.kubernetes.io/name]); any other is written ["key"],
// so that no key reads as an index or a name.
var (
	plainKey   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	bracketKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:/@+~-]*$`)
)

func joinKey(path, k string) string {
	switch {
	case plainKey.MatchString(k) && path == "":
		return k
	case plainKey.MatchString(k):
		return path + "." + k
	case bracketKey.MatchString(k):
		return path + "[" + k + "]"
	}
	return path + "[" + strconv.Quote(k) + "]"
}

// plainName matches a list item's name written bare in [name=…].
var plainName = regexp.MustCompile(`^[A-Za-z0-9_.:/@+-]+$`)

func nameKey(n string) string {
	if plainName.MatchString(n) {
		return "[name=" + n + "]"
	}
	return "[name=" + strconv.Quote(n) + "]"
}

// scalar writes a leaf: a string as it is, anything else as compact JSON
// (keys sorted).
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// equalScalar compares two leaves as JSON values (3 and 3.0 are equal, "3"
// and 3 are not).
func equalScalar(a, b any) bool {
	_, as := a.(string)
	_, bs := b.(string)
	return as == bs && scalar(a) == scalar(b)
}

// addObjects appends objs to c.Objects, keeping at most MaxObjects in
// SortObjects' order, and counting the rest in c.MoreObjects.
func (c *Cluster) addObjects(objs []Object) {
	all := append(c.Objects, objs...)
	SortObjects(all)
	if len(all) > MaxObjects {
		c.MoreObjects += len(all) - MaxObjects
		all = all[:MaxObjects:MaxObjects]
	}
	c.Objects = all
}

// SortObjects sorts objs as a report lists them: by layer, kind, namespace,
// name and apiVersion.
func SortObjects(objs []Object) {
	slices.SortStableFunc(objs, func(x, y Object) int {
		return cmp.Or(strings.Compare(x.Layer, y.Layer), strings.Compare(x.Delivery, y.Delivery), strings.Compare(x.Kind, y.Kind), strings.Compare(x.Namespace, y.Namespace),
			strings.Compare(x.Name, y.Name), strings.Compare(x.APIVersion, y.APIVersion))
	})
}

// changesText joins a list of changes for a one-line summary (a GitHub
// annotation): at most n, each as text writes it, then how many more.
func changesText(chs []Change, more, n int) string {
	var parts []string
	for i, ch := range chs {
		if i == n {
			more += len(chs) - i
			break
		}
		parts = append(parts, ch.text())
	}
	s := strings.Join(parts, "; ")
	if more > 0 {
		s += fmt.Sprintf("; %d more %s", more, plural(more, "field", "fields"))
	}
	return s
}
