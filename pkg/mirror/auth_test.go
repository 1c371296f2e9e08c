package mirror_test

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// dockerConfig points DOCKER_CONFIG at a config holding user:password for
// host, as `docker login host` writes it.
func dockerConfig(t *testing.T, host, user, password string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg := `{"auths":{"` + host + `":{"auth":"` + auth + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

// TestKeychain is SPEC §4's credential scope, the one keychain of mirror,
// publish and the checks at the mirror: FLEETGEN_REGISTRY_* go to
// spec.registry's host reached as it is declared, and nowhere else; they are
// a pair; the host reached by another scheme gets no credential at all.
func TestKeychain(t *testing.T) {
	dockerConfig(t, "contoso.azurecr.io", "docker-user", "docker-password")
	secure := schema.Registry{Host: "contoso.azurecr.io"}
	insecure := schema.Registry{Host: "registry.lan:5000", Insecure: true}
	for _, tc := range []struct {
		name           string
		registry       schema.Registry
		user, password string
		ref            string
		plainHTTP      bool // the reference is reached over plain HTTP
		want           string
	}{
		{"both set", secure, "ci", "fake-password", "contoso.azurecr.io/a:1", false, "ci"},
		{"password empty: the Docker config", secure, "ci", "", "contoso.azurecr.io/a:1", false, "docker-user"},
		{"user empty: the Docker config", secure, "", "fake-password", "contoso.azurecr.io/a:1", false, "docker-user"},
		{"another host", secure, "ci", "fake-password", "ghcr.io/contoso/fleet:1", false, ""},
		{"the registry's host over plain HTTP", secure, "ci", "fake-password", "contoso.azurecr.io/a:1", true, ""},
		{"the registry's host over plain HTTP, no pair", secure, "", "", "contoso.azurecr.io/a:1", true, ""},
		{"an insecure registry over plain HTTP", insecure, "ci", "fake-password", "registry.lan:5000/a:1", true, "ci"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nopts []name.Option
			if tc.plainHTTP {
				nopts = append(nopts, name.Insecure)
			}
			ref, err := name.NewTag(tc.ref, nopts...)
			if err != nil {
				t.Fatal(err)
			}
			auth, err := mirror.Keychain(tc.registry, tc.user, tc.password, authn.DefaultKeychain).Resolve(ref.Context())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := auth.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Username != tc.want {
				t.Errorf("user %q, want %q", cfg.Username, tc.want)
			}
		})
	}
}

// TestHalfCredentialsFallBack: a CI job whose password secret is empty (a
// pull request from a fork) gets the Docker config's credentials for the
// registry, from mirror as from the check publish runs: the pair is not
// sent in half. Before one keychain served both, mirror sent the user with
// an empty password (and the registry refused it) while publish fell back.
func TestHalfCredentialsFallBack(t *testing.T) {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("docker-user:docker-password"))
	var mu sync.Mutex
	var refused []string
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != want {
			if got != "" {
				mu.Lock()
				refused = append(refused, r.Method+" "+r.URL.Path)
				mu.Unlock()
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	host := strings.TrimPrefix(s.URL, "http://")
	dockerConfig(t, host, "docker-user", "docker-password")

	src := inProcess(t)
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	push(t, src+"/team/app:1", img)
	target := schema.Registry{Host: host}
	pairs, err := mirror.Plan(target, []string{src + "/team/app:1"})
	if err != nil {
		t.Fatal(err)
	}
	half := mirror.WithTargetCredentials("ci", "")
	entries, _, err := mirror.Run(context.Background(), pairs, half, mirror.WithBackoff(fastBackoff),
		mirror.WithKeychain(authn.DefaultKeychain))
	if err != nil {
		t.Fatalf("mirror with half a credential pair: %v", err)
	}
	if err := mirror.Check(context.Background(), target, entries, half, mirror.WithBackoff(fastBackoff)); err != nil {
		t.Errorf("check with half a credential pair: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("requests with other credentials than the Docker config's:\n  %s", strings.Join(refused, "\n  "))
	}
}
