package mirror

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Environment variables with spec.registry's credentials (CI); the Docker
// config and its credential helpers serve every other host. Their values
// never appear in logs or errors.
const (
	EnvRegistryUsername = "FLEETGEN_REGISTRY_USERNAME"
	EnvRegistryPassword = "FLEETGEN_REGISTRY_PASSWORD"
)

// Keychain is the one keychain of every registry request (mirror, publish,
// the checks at the mirror), SPEC §4's credential scope: user and password
// (EnvRegistryUsername, EnvRegistryPassword) go to reg.Host reached by the
// scheme it is declared with (plain HTTP when reg.Insecure or on loopback)
// and nowhere else. They are a pair: with either empty neither is sent, as
// when both are unset (a fork's pull request gets empty secrets). reg.Host
// reached by another scheme gets no credential at all, so none crosses plain
// HTTP to a host declared secure. Every other host gets next's (the Docker
// config and its credential helpers: authn.DefaultKeychain).
func Keychain(reg schema.Registry, user, password string, next authn.Keychain) authn.Keychain {
	var opts []name.Option
	if reg.Insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.NewRegistry(reg.Host, opts...)
	if err != nil {
		return next // a host that does not parse is never reached
	}
	return keychain{registry: r, user: user, password: password, next: next}
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
