package review

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFieldChanges: the fields that moved between two versions of an
// object, as JSON paths with old → new, lists merged by name where every item
// has one; a Secret's values never.
func TestFieldChanges(t *testing.T) {
	t.Parallel()
	const deploy = `
kind: Deployment
metadata: {name: web, labels: {app.kubernetes.io/name: web, tier: a}}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - {name: app, image: "app:1", args: [a, b], env: [{name: A, value: "1"}]}
        - {name: side, image: "side:1"}
`
	cases := map[string]struct {
		kind     string
		old, new string
		want     []Change
	}{
		"replicas": {kind: "Deployment", old: deploy, new: strings.Replace(deploy, "replicas: 3", "replicas: 5", 1),
			want: []Change{{Field: "spec.replicas", From: "3", To: "5"}}},
		"container by name": {kind: "Deployment", old: deploy,
			new: strings.Replace(strings.Replace(deploy, `"app:1"`, `"app:2"`, 1), `value: "1"`, `value: "2"`, 1),
			want: []Change{
				{Field: "spec.template.spec.containers[name=app].env[name=A].value", From: "1", To: "2"},
				{Field: "spec.template.spec.containers[name=app].image", From: "app:1", To: "app:2"},
			}},
		"container order does not matter": {kind: "Deployment", old: deploy,
			new: strings.Replace(deploy, `        - {name: app, image: "app:1", args: [a, b], env: [{name: A, value: "1"}]}
        - {name: side, image: "side:1"}`, `        - {name: side, image: "side:1"}
        - {name: app, image: "app:1", args: [a, b], env: [{name: A, value: "1"}]}`, 1)},
		"container removed, list by index": {kind: "Deployment", old: deploy,
			new: strings.Replace(strings.Replace(deploy, `        - {name: side, image: "side:1"}`+"\n", "", 1), "[a, b]", "[a, c, d]", 1),
			want: []Change{
				{Field: "spec.template.spec.containers[name=app].args[1]", From: "b", To: "c"},
				{Field: "spec.template.spec.containers[name=app].args[2]", To: "d"},
				{Field: "spec.template.spec.containers[name=side].image", From: "side:1"},
				{Field: "spec.template.spec.containers[name=side].name", From: "side"},
			}},
		"label keys": {kind: "Deployment", old: deploy,
			new: strings.Replace(deploy, "tier: a", `tier: a, "we ird": x, "0": z`, 1),
			want: []Change{
				{Field: `metadata.labels["0"]`, To: "z"},
				{Field: `metadata.labels["we ird"]`, To: "x"},
			}},
		"kinds of value": {kind: "ConfigMap", old: "data: {a: '3', b: {x: 1}, c: [], d: true}",
			new: "data: {a: 3, b: 'x', c: {}, d: null, e: 1.5}",
			want: []Change{
				{Field: "data.a", From: "3", To: "3"},
				{Field: "data.b.x", From: "1"},
				{Field: "data.b", To: "x"},
				{Field: "data.c", From: "[]"},
				{Field: "data.c", To: "{}"},
				{Field: "data.d", From: "true", To: "null"},
				{Field: "data.e", To: "1.5"},
			}},
		"secret: names only": {kind: "Secret",
			old: "metadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"password\":\"MARKER1\"}}'}}\ndata: {password: MARKER1, gone: MARKER2}\nstringData: {same: MARKER3}",
			new: "metadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"password\":\"MARKER4\"}}'}}\ndata: {password: MARKER4, token: MARKER5}\nstringData: {same: MARKER3}",
			want: []Change{
				{Field: "data.gone", From: Set, FromMarker: true},
				{Field: "data.password", From: Set, To: Changed, FromMarker: true, ToMarker: true},
				{Field: "data.token", To: Set, ToMarker: true},
				{Field: "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", From: Set, To: Changed, FromMarker: true, ToMarker: true},
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, more := FieldChanges(tc.kind, decode(t, tc.old), decode(t, tc.new))
			if more != 0 {
				t.Errorf("more = %d", more)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			if tc.kind == "Secret" && strings.Contains(fmt.Sprint(got), "MARKER") {
				t.Errorf("a Secret's value shows: %v", got)
			}
		})
	}
}

// TestObjectBounds: an object lists at most MaxObjectChanges fields and a
// cluster at most MaxObjects objects; the rest are counted, and every format
// says so.
func TestObjectBounds(t *testing.T) {
	t.Parallel()
	old, next := map[string]any{}, map[string]any{}
	for i := range MaxObjectChanges + 7 {
		old[fmt.Sprintf("k%04d", i)] = "a"
		next[fmt.Sprintf("k%04d", i)] = "b"
	}
	chs, more := FieldChanges("ConfigMap", map[string]any{"data": old}, map[string]any{"data": next})
	if len(chs) != MaxObjectChanges || more != 7 {
		t.Errorf("%d changes and %d more, want %d and 7", len(chs), more, MaxObjectChanges)
	}
	objs := make([]Object, MaxObjects+3)
	for i := range objs {
		objs[i] = Object{Layer: "l", APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("c%04d", i), Change: Update}
	}
	objs[0].Changes, objs[0].MoreChanges = chs, more
	var r Report
	r.AddObjects(map[string][]Object{"a": objs})
	c := r.Clusters[0]
	if len(c.Objects) != MaxObjects || c.MoreObjects != 3 {
		t.Errorf("%d objects and %d more, want %d and 3", len(c.Objects), c.MoreObjects, MaxObjects)
	}
	for format, want := range map[string][]string{
		FormatText:     {"    … 7 more fields\n", "  … 3 more objects\n", "    data.k0000: a → b\n"},
		FormatMarkdown: {"  - and 87 more fields\n", "- and 3 more objects\n", "  - `data.k0000`: `a` → `b`\n"},
		FormatGitHub:   {"data.k0000: a → b; data.k0001: a → b; data.k0002: a → b; 104 more fields"},
		FormatJSON:     {`"moreObjects": 3`, `"moreChanges": 7`},
	} {
		var b strings.Builder
		if err := r.Write(&b, format, ""); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%s", format, w, b.String())
			}
		}
	}
}

// TestOnly: --cluster keeps the named clusters, the files about them, and
// the manager's changes and shared files only when the manager is named.
func TestOnly(t *testing.T) {
	t.Parallel()
	r := Report{
		Clusters: []Cluster{{Name: "a", Change: Update}, {Name: "b", Change: Added}},
		Manager:  Manager{Changes: []Change{{Field: "groups.g", To: "selector x=y"}}, Warnings: []string{}},
		Files: Files{Added: []string{"clusters/b/apps.yaml", "manager/fleet/b/cluster.yaml"}, Removed: []string{},
			Changed: []string{"clusters/a/apps.yaml", "manager/fleet/groups/g.yaml", "clusters/hub/manager.yaml"}},
	}
	got := r.Only(map[string]bool{"a": true}, false)
	want := Report{Clusters: []Cluster{{Name: "a", Change: Update}}, Manager: Manager{Changes: []Change{}, Warnings: []string{}},
		Files: Files{Added: []string{}, Removed: []string{}, Changed: []string{"clusters/a/apps.yaml"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("only a (-want +got):\n%s", d)
	}
	got = r.Only(map[string]bool{"hub": true}, true)
	want = Report{Clusters: []Cluster{}, Manager: r.Manager,
		Files: Files{Added: []string{}, Removed: []string{}, Changed: []string{"manager/fleet/groups/g.yaml", "clusters/hub/manager.yaml"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("only the manager (-want +got):\n%s", d)
	}
}
