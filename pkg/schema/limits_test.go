package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestExpansionCaps is the attack of issue 26 family 4: a small fleet.yaml
// that asks for an output thousands of times its size is refused by Load (so
// by validate) before any layer is built, quickly and naming the cap.
func TestExpansionCaps(t *testing.T) {
	t.Parallel()
	head := "apiVersion: fleetgen.dev/v1alpha1\nkind: Fleet\nmetadata: {name: big}\nspec:\n" +
		"  registry: {host: r.example.io}\n  source: {kind: git, url: https://git.example/x.git}\n"
	clusters := func(n int) string {
		var b strings.Builder
		b.WriteString("  clusters:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: c%d, registration: {mode: capi}}\n", i)
		}
		return b.String()
	}
	layers := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("  layers:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: l%d, path: ./apps%s}\n", i, extra)
		}
		return b.String()
	}
	big := strings.Repeat("x", 4<<20)
	tests := map[string]struct {
		yaml string
		want string // "" when the fleet is within the caps
	}{
		"600 layers x 600 clusters": {
			yaml: head + layers(600, "") + clusters(600),
			want: "make 360000 layer Kustomizations",
		},
		"4 MiB substitute x 200 clusters": {
			yaml: head + "  layers:\n  - {name: l, path: ./apps, substitute: {v: " + big + "}}\n" + clusters(200),
			want: "spec.layers[0].substitute: the layer Kustomizations would carry 800 MiB",
		},
		"4 MiB substitute x 10 clusters": {
			yaml: head + "  layers:\n  - {name: l, path: ./apps, substitute: {v: " + big + "}}\n" + clusters(10),
		},
		"80 layers x 600 clusters": {
			yaml: head + layers(80, "") + clusters(600),
		},
		// A large fleet may select more layers than a small file may ask
		// for (Caps): five per cluster past LargeFleet clusters.
		"5 layers x 60,000 clusters": {
			yaml: head + layers(5, "") + clusters(60_000),
		},
		"6 layers x 60,000 clusters": {
			yaml: head + layers(6, "") + clusters(60_000),
			want: "make 360000 layer Kustomizations",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() && strings.Contains(name, "60,000") {
				t.Skip("a 60,000-cluster fleet.yaml (-short)")
			}
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "apps"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "fleet.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := Load(p, LoadOptions{})
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Load took %v: the cap must be checked before any expansion", d)
			}
			switch {
			case tc.want == "" && err != nil && strings.Contains(err.Error(), "more than fleetgen renders"):
				t.Fatalf("a fleet within the caps was refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("Load accepted it; want an error containing %q", tc.want)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "docs/security.md"):
				t.Fatalf("error %q: want %q and a pointer to docs/security.md", err, tc.want)
			case !problem.IsInvalid(err):
				t.Fatalf("error %v is not an input error (exit 2)", err)
			case strings.Contains(err.Error(), big[:64]):
				t.Fatal("the error quotes the substitute value")
			}
		})
	}
}

// TestCaps: the expansion caps are the base ones up to LargeFleet clusters,
// then grow LayersPerCluster per cluster to twice the base, never more.
func TestCaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		clusters    int
		kusts       int64
		substitutes int64
	}{
		{0, 250_000, 64 << 20},
		{600, 250_000, 64 << 20},
		{LargeFleet, 250_000, 64 << 20},
		{60_000, 300_000, 64 << 20 * 6 / 5},
		{100_000, 500_000, 128 << 20},
		{195_000, 500_000, 128 << 20},
	} {
		k, b := Caps(tc.clusters)
		if k != tc.kusts || b != tc.substitutes {
			t.Errorf("Caps(%d) = %d, %d; want %d, %d", tc.clusters, k, b, tc.kusts, tc.substitutes)
		}
	}
}
