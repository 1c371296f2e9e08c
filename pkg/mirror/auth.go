package mirror

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Environment variables with spec.registry's credentials (CI); the Docker
// config and its credential helpers serve every other host. Their values
// never appear in logs or errors.
const (
	EnvRegistryUsername = "FLEETGEN_REGISTRY_USERNAME"
	EnvRegistryPassword = "FLEETGEN_REGISTRY_PASSWORD"
)

// Keychain is the one keychain of every registry request fleetgen makes
// (mirror, publish, the checks at the mirror), SPEC §4's credential scope:
//
//   - user and password (EnvRegistryUsername and EnvRegistryPassword) go to
//     registry (spec.registry.host) reached by the scheme it is declared
//     with, and to no other host. They are a pair: with either empty,
//     neither is sent and registry gets next's, as when both are unset (a CI
//     job whose secret is empty, a pull request from a fork, falls back to
//     the Docker config rather than sending half a credential);
//   - registry's host reached by another scheme gets no credential at all,
//     ours or next's: none crosses plain HTTP to a host declared secure;
//   - every other host gets next's (authn.DefaultKeychain when nil: the
//     Docker config and its credential helpers, so that `az acr login`
//     works).
func Keychain(registry name.Registry, user, password string, next authn.Keychain) authn.Keychain {
	if next == nil {
		next = authn.DefaultKeychain
	}
	return keychain{registry: registry, user: user, password: password, next: next}
}

type keychain struct {
	registry       name.Registry
	user, password string
	next           authn.Keychain
}

func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() != k.registry.RegistryStr() {
		return k.next.Resolve(r)
	}
	if s, ok := r.(interface{ Scheme() string }); !ok || s.Scheme() != k.registry.Scheme() {
		return authn.Anonymous, nil
	}
	if k.user == "" || k.password == "" {
		return k.next.Resolve(r)
	}
	return &authn.Basic{Username: k.user, Password: k.password}, nil
}
