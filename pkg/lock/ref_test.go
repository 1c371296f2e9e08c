package lock_test

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/lock"
)

const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestNormalize(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"short name":      {"busybox", "docker.io/library/busybox:latest"},
		"index.docker.io": {"index.docker.io/library/nginx:1.27", "docker.io/library/nginx:1.27"},
		"docker hub org":  {"bitnami/redis:7", "docker.io/bitnami/redis:7"},
		"other registry":  {"ghcr.io/kubereboot/kured:1.12.0", "ghcr.io/kubereboot/kured:1.12.0"},
		"port":            {"127.0.0.1:5000/a/b", "127.0.0.1:5000/a/b:latest"},
		"oci chart":       {"oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1", "ghcr.io/stefanprodan/charts/podinfo:6.7.1"},
		"digest only":     {"ghcr.io/a/b@" + d, "ghcr.io/a/b@" + d},
		"tag and digest":  {"nginx:1.27@" + d, "docker.io/library/nginx:1.27@" + d},
		"port and digest": {"127.0.0.1:5000/a/b@" + d, "127.0.0.1:5000/a/b@" + d},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := lock.Normalize(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestImageRepositoryAndPinned(t *testing.T) {
	tests := map[string]struct{ target, repo string }{
		"tag":            {"acr.example.io/kubereboot/kured:1.12.0", "acr.example.io/kubereboot/kured"},
		"port and tag":   {"127.0.0.1:5000/kubereboot/kured:1.12.0", "127.0.0.1:5000/kubereboot/kured"},
		"digest only":    {"acr.example.io/a/b@" + d, "acr.example.io/a/b"},
		"port, digest":   {"127.0.0.1:5000/a/b@" + d, "127.0.0.1:5000/a/b"},
		"tag and digest": {"acr.example.io/a/b:1@" + d, "acr.example.io/a/b"},
		"no tag":         {"acr.example.io/a/b", "acr.example.io/a/b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			img := lock.Image{Source: "x", Target: tc.target, Digest: d}
			if got := img.Repository(); got != tc.repo {
				t.Errorf("Repository() = %q, want %q", got, tc.repo)
			}
			if got, want := img.Pinned(), tc.repo+"@"+d; got != want {
				t.Errorf("Pinned() = %q, want %q", got, want)
			}
		})
	}
}

func TestSplitRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"busybox":                              {"busybox", ""},
		"busybox:1.36":                         {"busybox", "1.36"},
		"localhost:5000/x/y":                   {"localhost:5000/x/y", ""},
		"localhost:5000/x/y:v1":                {"localhost:5000/x/y", "v1"},
		"ghcr.io/x/y@sha256:abc":               {"ghcr.io/x/y", ""},
		"ghcr.io/x/y:1.0@sha256:abc":           {"ghcr.io/x/y", "1.0"},
		"127.0.0.1:5000/k/kured:1.12.0@sha256": {"127.0.0.1:5000/k/kured", "1.12.0"},
	} {
		name, tag := lock.SplitRef(ref)
		if name != want[0] || tag != want[1] {
			t.Errorf("SplitRef(%q) = %q, %q; want %q, %q", ref, name, tag, want[0], want[1])
		}
	}
}
