package publish

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestShownPath: a path from a layer folder cannot forge a line of the dry
// run's listing.
func TestShownPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"apps/x.yaml":                        "apps/x.yaml",
		"apps/x.yaml\nA manager/forged.yaml": `"apps/x.yaml\nA manager/forged.yaml"`,
		"apps/\"q\".yaml":                    `"apps/\"q\".yaml"`,
	} {
		if got := shownPath(in); got != want {
			t.Errorf("shownPath(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestOCIDryRun: with WithDryRun, OCI builds the artifact, pushes nothing
// and lists it; after a real push, the dry run says there is nothing to push.
func TestOCIDryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := testenv.Registry(t)
	fx := newFixture(t, schema.SourceOCI, "oci://"+host+"/contoso/dry", "", "")
	fx.f.Spec.Source.Insecure = true
	var out bytes.Buffer
	res, err := OCI(ctx, fx.f, fx.l, fx.files, WithDryRun(&out))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "would push "+host+"/contoso/dry:v1 as "+res.Revision) || !strings.Contains(out.String(), "\n  manager/verrazzano/admin-cluster.yaml\n") {
		t.Errorf("dry run output:\n%s", out.String())
	}
	ref, _ := name.NewTag(host+"/contoso/dry:v1", name.Insecure)
	if _, err := remote.Head(ref, remote.WithContext(ctx)); err == nil {
		t.Fatal("the dry run pushed the artifact")
	}
	if _, err := OCI(ctx, fx.f, fx.l, fx.files); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := OCI(ctx, fx.f, fx.l, fx.files, WithDryRun(&out)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing to push") {
		t.Errorf("dry run after the push:\n%s", out.String())
	}
}
