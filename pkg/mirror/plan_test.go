package mirror_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestPlan(t *testing.T) {
	acr := schema.Registry{Host: "contoso.azurecr.io"}
	tests := map[string]struct {
		reg     schema.Registry
		refs    []string
		want    []mirror.Pair
		wantErr []string // substrings of the error
	}{
		"strip-host like az acr import": {
			reg:  acr,
			refs: []string{"ghcr.io/kubereboot/kured:1.12.0"},
			want: []mirror.Pair{{"ghcr.io/kubereboot/kured:1.12.0", "contoso.azurecr.io/kubereboot/kured:1.12.0"}},
		},
		"docker hub short names get library and latest": {
			reg:  acr,
			refs: []string{"busybox", "index.docker.io/library/nginx:1.27", "docker.io/bitnami/redis:7"},
			want: []mirror.Pair{
				{"docker.io/bitnami/redis:7", "contoso.azurecr.io/bitnami/redis:7"},
				{"docker.io/library/busybox:latest", "contoso.azurecr.io/library/busybox:latest"},
				{"docker.io/library/nginx:1.27", "contoso.azurecr.io/library/nginx:1.27"},
			},
		},
		"prefix": {
			reg:  schema.Registry{Host: "contoso.azurecr.io", Prefix: "/mirror/"},
			refs: []string{"quay.io/jetstack/cert-manager-controller:v1.15.0"},
			want: []mirror.Pair{{"quay.io/jetstack/cert-manager-controller:v1.15.0", "contoso.azurecr.io/mirror/jetstack/cert-manager-controller:v1.15.0"}},
		},
		"preserve-host": {
			reg:  schema.Registry{Host: "127.0.0.1:5000", Prefix: "m", Layout: schema.LayoutPreserveHost},
			refs: []string{"ghcr.io/kubereboot/kured:1.12.0", "busybox:1.36"},
			want: []mirror.Pair{
				{"docker.io/library/busybox:1.36", "127.0.0.1:5000/m/docker.io/library/busybox:1.36"},
				{"ghcr.io/kubereboot/kured:1.12.0", "127.0.0.1:5000/m/ghcr.io/kubereboot/kured:1.12.0"},
			},
		},
		"oci chart": {
			reg:  acr,
			refs: []string{"oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1"},
			want: []mirror.Pair{{"ghcr.io/stefanprodan/charts/podinfo:6.7.1", "contoso.azurecr.io/stefanprodan/charts/podinfo:6.7.1"}},
		},
		"digest only and tag with digest": {
			reg:  acr,
			refs: []string{"ghcr.io/a/b@" + testDigest, "ghcr.io/a/c:1@" + testDigest},
			want: []mirror.Pair{
				{"ghcr.io/a/b@" + testDigest, "contoso.azurecr.io/a/b@" + testDigest},
				{"ghcr.io/a/c:1@" + testDigest, "contoso.azurecr.io/a/c:1"},
			},
		},
		"deduplicated and sorted": {
			reg:  acr,
			refs: []string{"nginx:1.27", "docker.io/library/nginx:1.27", "alpine", "index.docker.io/library/nginx:1.27"},
			want: []mirror.Pair{
				{"docker.io/library/alpine:latest", "contoso.azurecr.io/library/alpine:latest"},
				{"docker.io/library/nginx:1.27", "contoso.azurecr.io/library/nginx:1.27"},
			},
		},
		"two tags of one repository are fine": {
			reg:  acr,
			refs: []string{"ghcr.io/a/b:1", "ghcr.io/a/b:2"},
			want: []mirror.Pair{
				{"ghcr.io/a/b:1", "contoso.azurecr.io/a/b:1"},
				{"ghcr.io/a/b:2", "contoso.azurecr.io/a/b:2"},
			},
		},
		"collision names both sources": {
			reg:     acr,
			refs:    []string{"ghcr.io/kubereboot/kured:1.12.0", "docker.io/kubereboot/kured:1.12.0"},
			wantErr: []string{"docker.io/kubereboot/kured and ghcr.io/kubereboot/kured would both be mirrored to contoso.azurecr.io/kubereboot/kured"},
		},
		"no collision with preserve-host": {
			reg:  schema.Registry{Host: "contoso.azurecr.io", Layout: schema.LayoutPreserveHost},
			refs: []string{"ghcr.io/kubereboot/kured:1.12.0", "docker.io/kubereboot/kured:1.12.0"},
			want: []mirror.Pair{
				{"docker.io/kubereboot/kured:1.12.0", "contoso.azurecr.io/docker.io/kubereboot/kured:1.12.0"},
				{"ghcr.io/kubereboot/kured:1.12.0", "contoso.azurecr.io/ghcr.io/kubereboot/kured:1.12.0"},
			},
		},
		"invalid reference": {
			reg:     acr,
			refs:    []string{"Not A Ref"},
			wantErr: []string{`image "Not A Ref": invalid reference`},
		},
		"no host": {
			reg:     schema.Registry{},
			refs:    []string{"busybox"},
			wantErr: []string{"spec.registry.host"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mirror.Plan(tc.reg, tc.refs)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Plan = %v, want error", got)
				}
				if !problem.IsInvalid(err) {
					t.Errorf("error %v is not an input error", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Plan (-want +got):\n%s", d)
			}
		})
	}
}
