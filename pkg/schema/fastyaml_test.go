package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// v3Tree is yaml.v3's tree of data when it is one document, else nil.
func v3Tree(data []byte) *yaml.Node {
	var doc, extra yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &doc); err != nil {
		return nil
	}
	if err := safeDecode(dec, &extra); !errors.Is(err, io.EOF) {
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	return doc.Content[0]
}

// sameTree reports the first difference between fastParse's and yaml.v3's
// trees in what the decoder reads: kind, style, resolved tag, value,
// position and children.
func sameTree(path string, fast, slow *yaml.Node) error {
	if fast.Kind != slow.Kind || fast.Style != slow.Style || fast.ShortTag() != slow.ShortTag() || fast.Value != slow.Value ||
		fast.Line != slow.Line || fast.Column != slow.Column || len(fast.Content) != len(slow.Content) {
		return fmt.Errorf("%s: fast {kind %v style %v tag %s value %q at %d:%d, %d children}, yaml.v3 {kind %v style %v tag %s value %q at %d:%d, %d children}",
			path, fast.Kind, fast.Style, fast.ShortTag(), fast.Value, fast.Line, fast.Column, len(fast.Content),
			slow.Kind, slow.Style, slow.ShortTag(), slow.Value, slow.Line, slow.Column, len(slow.Content))
	}
	for i := range fast.Content {
		if err := sameTree(fmt.Sprintf("%s/%d", path, i), fast.Content[i], slow.Content[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkFast fails when fastParse accepts data and builds another tree than
// yaml.v3, or accepts what yaml.v3 refuses; it returns whether it accepted.
func checkFast(t testing.TB, name string, data []byte) bool {
	t.Helper()
	fast, ok := fastParse(data)
	if !ok {
		return false
	}
	slow := v3Tree(data)
	if slow == nil {
		t.Fatalf("%s: fastParse accepted a document yaml.v3 refuses:\n%s", name, data)
	}
	if err := sameTree("", fast, slow); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, data)
	}
	return true
}

func fastSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{"bench": fleetYAML(50), "blockBench": blockFleetYAML(50)}
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "fleet.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example fleets: %v", err)
	}
	for _, dir := range goldenCases(t) {
		paths = append(paths, filepath.Join(dir, "fleet.yaml"))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds[p] = b
	}
	return seeds
}

// blockFleetYAML is fleetYAML in block style, as fleetgen's generators
// and most users write it.
func blockFleetYAML(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: fleetgen.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: bench\nspec:\n  clusters:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - name: c-%d # cluster\n    labels:\n      env: \"prod\"\n      region: 'r%d'\n    registration:\n      mode: agent\n      tokenTTL: 240h\n", i, i%7)
	}
	return []byte(b.String())
}

// TestFastParse holds fastParse to yaml.v3 on every example and golden
// fleet and on snippets of what it must accept and what it leaves to
// yaml.v3.
func TestFastParse(t *testing.T) {
	accepted := 0
	for name, data := range fastSeeds(t) {
		if checkFast(t, name, data) {
			accepted++
		}
	}
	t.Logf("fastParse accepted %d of %d example and golden fleets", accepted, len(fastSeeds(t)))
	if accepted < 10 {
		t.Errorf("fastParse accepted %d of the example and golden fleets: want most of them", accepted)
	}
	for _, y := range []string{
		"a: b\n",
		"---\na: b\n",
		"# head\na: b # c\n\nd:\n  e: f\n",
		"a:\n- b\n- c: d\n  e: 'f'\n",
		"a:\n  - b\n  -   c: d\n      e: \"f g\"\n",
		"a: [b, c:1, 'd']\nb: {c: d, e: \"f\"}\nc: []\nd: {}\n",
		"a: 1\nb: true\nc: ~\nd: null\ne: 0x1F\nf: 2001-12-14\ng: yes\n",
		"kubernetes.io/os: linux\na.b-c_d: x y  z\n",
		"a: http://x:80/y\nb: registry:5000/img:tag\n",
	} {
		if !checkFast(t, y, []byte(y)) {
			t.Errorf("fastParse left to yaml.v3:\n%s", y)
		}
	}
	for _, y := range []string{
		"a: &x b\nc: *x\n", "a: !!str b\n", "a: |\n  b\n", "a: >\n  b\n", "a: \"b\\nc\"\n",
		"a: 'it''s'\n", "a: b\n  c\n", "a:\n", "a: b\n---\nc: d\n", "\ta: b\n", "a: b\r\n",
		"a: é\n", "- a\n", "a: [b, [c]]\n", "a: {b: {c: d}}\n", "a: [b,]\n", "'a': b\n", "? a\n: b\n",
		"a: b: c\n", "<<: {a: b}\n", "a: [b\n", "a:\n  - \n", "%YAML 1.2\n---\na: b\n", "",
		"a: b\n c: d\n", "a:\n  b: c\n d: e\n",
	} {
		if checkFast(t, y, []byte(y)) {
			t.Errorf("fastParse accepted what it should leave to yaml.v3:\n%s", y)
		}
	}
}

// FuzzFastParse: whatever fastParse accepts, yaml.v3 parses to the same tree.
func FuzzFastParse(f *testing.F) {
	for _, data := range fastSeeds(f) {
		f.Add(data)
	}
	f.Add([]byte("a: [b, 'c', \"d\"]\nb:\n- c: {d: e}\n  f: g # h\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, "fuzz", data)
	})
}
