package mirror

import "github.com/google/go-containerregistry/pkg/authn"

// targetKeychain answers with fixed credentials for the target registries,
// reached as the targets are, and defers to the next keychain for everything
// else. hosts maps a target registry to its scheme (https, or http when
// declared insecure or on loopback): a request to the same host by another
// scheme, such as a source mirror on the target's host declared insecure,
// gets no credentials, so that they never cross plain HTTP to a host that is
// reached over HTTPS (SPEC §4).
type targetKeychain struct {
	hosts          map[string]string
	user, password string
	next           authn.Keychain
}

func (k targetKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if scheme, ok := k.hosts[r.RegistryStr()]; ok {
		if scheme == schemeOf(r) {
			return authn.FromConfig(authn.AuthConfig{Username: k.user, Password: k.password}), nil
		}
		return authn.Anonymous, nil
	}
	return k.next.Resolve(r)
}

// schemeOf is the scheme go-containerregistry reaches r by: http for a
// registry named insecure or on loopback, https otherwise.
func schemeOf(r authn.Resource) string {
	if s, ok := r.(interface{ Scheme() string }); ok {
		return s.Scheme()
	}
	return "https"
}
