package publish

import (
	"context"
	"fmt"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/test/testenv"
)

// bigTree makes fx's render a tree shaped like 10,000 clusters (7 files
// each, ~70k files).
func bigTree(b *testing.B, fx *fixture, clusters int, variant string) {
	b.Helper()
	files := map[string]string{}
	for i := 0; i < clusters; i++ {
		c := fmt.Sprintf("c%05d", i)
		h := layout.Header
		files["manager/fleet/"+c+"/cluster.yaml"] = h + "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: " + c + "\n  namespace: fleet-default\n"
		files["manager/fleet/"+c+"/token.yaml"] = h + "kind: ClusterRegistrationToken\nmetadata:\n  name: " + c + "-token\nspec:\n  ttl: 240h\n"
		files["clusters/"+c+"/kustomization.yaml"] = h + "resources: [source.yaml, infrastructure.yaml, apps.yaml]\n"
		files["clusters/"+c+"/source.yaml"] = h + "kind: GitRepository\nmetadata:\n  name: contoso\n"
		files["clusters/"+c+"/infrastructure.yaml"] = h + "kind: Kustomization\nspec:\n  path: ./infrastructure/prod\n  postBuild:\n    substitute:\n      cluster: " + c + "\n"
		files["clusters/"+c+"/apps.yaml"] = h + "kind: Kustomization\nspec:\n  path: ./apps/prod\n"
		files["agents/"+c+"/values.yaml"] = h + "apiServerURL: https://fleet.contoso.example:6443\nclientID: " + c + variant + "\n"
	}
	fx.files = genFiles(files)
}

// BenchmarkGitPublish10kClusters publishes a ~70k-file tree to a local bare
// repository: the first commit, then one changed file per iteration, then an
// unchanged tree.
//
//	go test ./pkg/publish -run '^$' -bench GitPublish -benchtime 3x
func BenchmarkGitPublish10kClusters(b *testing.B) {
	ctx := context.Background()
	bare := testenv.BareRepo(b, "fleet.git")
	fx := newFixture(b, "git", clusterURL, "", "")
	bigTree(b, fx, 10000, "")
	b.Run("initial", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			repo := testenv.BareRepo(b, "fleet.git")
			res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(repo))
			if err != nil || !res.Changed {
				b.Fatalf("%+v %v", res, err)
			}
			b.ReportMetric(float64(res.Files), "files")
		}
	})
	if _, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(bare)); err != nil {
		b.Fatal(err)
	}
	run := 0
	b.Run("one-file-changed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			run++
			b.StopTimer()
			setFile(fx, "agents/c00000/values.yaml", fmt.Sprintf("%srun: %d\n", layout.Header, run))
			b.StartTimer()
			res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(bare))
			if err != nil || !res.Changed {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(bare))
			if err != nil || res.Changed {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
}

// BenchmarkOCIArtifact10kClusters builds (not pushes) the artifact of a
// ~70k-file tree.
func BenchmarkOCIArtifact10kClusters(b *testing.B) {
	fx := newFixture(b, "oci", "oci://example.invalid/fleet", "", "")
	bigTree(b, fx, 10000, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := collect(fx.f, fx.files, quiet(b))
		if err != nil {
			b.Fatal(err)
		}
		img, err := artifact(c, map[string]string{SourceAnnotation: "s", RevisionAnnotation: "r"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := img.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}

// setFile replaces the content of one rendered file of fx.
func setFile(fx *fixture, p, data string) {
	for i := range fx.files {
		if fx.files[i].Path == p {
			fx.files[i].Data = []byte(data)
		}
	}
}
