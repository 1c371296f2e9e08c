package schema

import (
	"fmt"
	"strings"

	"filippo.io/age"
	"fleetgen.dev/fleetgen/pkg/problem"
)

func (v *validator) encryption() {
	e := v.f.Spec.Encryption
	if e == nil {
		return
	}
	if e.SOPS == nil {
		v.add(problem.Required("spec.encryption", "no encryption method: want sops: {ageRecipients: [age1…]}"))
		return
	}
	if len(e.SOPS.AgeRecipients) == 0 {
		v.add(problem.Required("spec.encryption.sops.ageRecipients", "no age recipients: want at least one age1… public key"))
	}
	for i, r := range e.SOPS.AgeRecipients {
		if strings.HasPrefix(strings.ToUpper(r), "AGE-SECRET-KEY-") {
			// Never echo it: it is the private key.
			v.add(problem.Other(fmt.Sprintf("spec.encryption.sops.ageRecipients[%d]", i), "this is an age secret key, not a recipient: want its public key age1… (age-keygen -y KEYFILE), and keep the secret key out of fleet.yaml"))
		} else if _, err := age.ParseX25519Recipient(r); err != nil {
			v.add(problem.InvalidValue(fmt.Sprintf("spec.encryption.sops.ageRecipients[%d]", i), "invalid age recipient %q: want an X25519 public key age1… (age-keygen -y KEYFILE prints it)", r))
		}
	}
	v.subdomain("spec.encryption.sops.secretRef", "secret name", e.SOPS.SecretRef)
}
