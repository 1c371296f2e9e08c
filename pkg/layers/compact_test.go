package layers_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layers"
)

// TestCompact: New lets go of the units' variables; after Model.Compact
// every object reads as before, the objects post-build substitution made are
// made again on each read (the model no longer holds them), and reads from
// many goroutines agree.
func TestCompact(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml, deploy.yaml, plain.yaml]\n",
		"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {cluster: '${cluster}'}}\ndata: {name: '${cluster}', region: eu}\n",
		"apps/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        image: example.org/web:1
        env: [{name: CLUSTER, value: "${cluster}"}, {name: ZONE, value: z}]
`,
		"apps/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {x: y}\n",
	})
	var units []layers.Unit
	for i := range 12 {
		units = append(units, layers.Unit{Cluster: fmt.Sprintf("c%02d", i), Layer: "apps", Path: "apps",
			Vars: map[string]string{"cluster": fmt.Sprintf("c%02d", i)}})
	}
	m, err := layers.New(dir, units, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		if u.Vars != nil {
			t.Fatalf("unit %s/%s: New kept its Vars", u.Cluster, u.Layer)
		}
	}
	read := func() map[string]any {
		got := map[string]any{}
		for _, u := range units {
			for _, o := range m.Received(u.Cluster, u.Layer).Objects {
				got[u.Cluster+" "+o.Describe()] = o.Map()
			}
		}
		return got
	}
	before := read()
	if len(before) != 36 {
		t.Fatalf("%d objects, want 36", len(before))
	}
	last := m.Received("c11", "apps")
	same := func(o *layers.Object) bool {
		return reflect.ValueOf(o.Map()).UnsafePointer() == reflect.ValueOf(o.Map()).UnsafePointer()
	}
	if !same(last.Objects[0]) {
		t.Fatal("before Compact, a substituted object is made on each read")
	}

	m.Compact()
	if d := cmp.Diff(before, read()); d != "" {
		t.Errorf("objects after Compact (-before +after):\n%s", d)
	}
	for _, o := range last.Objects {
		if want := o.Name != "plain"; same(o) == want {
			t.Errorf("%s after Compact: made on each read %v, want %v (substituted objects only)", o.Describe(), !same(o), want)
		}
	}
	// Has answers as the object made again does, for fields there and not,
	// below a substituted string and beside it.
	paths := [][]string{{"data"}, {"data", "name"}, {"data", "zone"}, {"metadata", "labels", "cluster"},
		{"metadata", "labels", "cluster", "x"}, {"spec", "template", "spec", "containers"}, {"spec", "replicas"}, {"nope"}}
	for _, u := range units {
		for _, o := range m.Received(u.Cluster, u.Layer).Objects {
			for _, p := range paths {
				if got, want := o.Has(p...), has(o.Map(), p); got != want {
					t.Errorf("%s %s: Has(%v) = %v, want %v", u.Cluster, o.Describe(), p, got, want)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if d := cmp.Diff(before, read()); d != "" {
				t.Errorf("a concurrent read after Compact (-before +after):\n%s", d)
			}
		})
	}
	wg.Wait()
}

// has reports whether v holds a field at path, as Object.Has should.
func has(v map[string]any, path []string) bool {
	var x any = v
	for _, k := range path {
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		if x, ok = m[k]; !ok {
			return false
		}
	}
	return true
}
