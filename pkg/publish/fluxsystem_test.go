package publish

import (
	"context"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestGitKeepsHeadedFluxSystem: publish never removes anything under a
// cluster folder's flux-system/, not even a file that carries fleetgen's
// header and that the render lacks (SPEC §3, issue 26 family 4), with the
// rendered tree at the root or at spec.source.path.
func TestGitKeepsHeadedFluxSystem(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "fleet"} {
		t.Run("path "+base, func(t *testing.T) {
			t.Parallel()
			prefix := ""
			if base != "" {
				prefix = base + "/"
			}
			bare := testenv.BareRepo(t, "fleet.git")
			boot := bootstrap("prod-1")
			seeded := map[string]string{}
			for p, d := range boot {
				if p != "README.md" {
					p = prefix + p
				}
				seeded[p] = d
			}
			headed := prefix + "clusters/prod-1/flux-system/extra.yaml"
			seeded[headed] = layout.Header + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
			stale := prefix + "clusters/prod-1/stale.yaml"
			seeded[stale] = layout.Header + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stale\n"
			seed(t, bare, seeded)

			fx := newFixture(t, "git", clusterURL, base, "")
			if _, err := Git(context.Background(), fx.f, fx.l, fx.files, WithPushURL(bare)); err != nil {
				t.Fatal(err)
			}
			if got := testenv.Git(t, bare, "ls-tree", "--name-only", "main", "--", headed); got != headed {
				t.Errorf("publish removed %s, a fleetgen-headed file under flux-system/", headed)
			}
			if got := testenv.Git(t, bare, "ls-tree", "--name-only", "main", "--", stale); got != "" {
				t.Errorf("publish kept %s, a stale fleetgen file outside flux-system/ (the control)", stale)
			}
		})
	}
}
