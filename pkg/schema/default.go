package schema

// Default fills every unset field with its default. It is pure and idempotent:
// defaulting a defaulted Fleet changes nothing. It never overrides a value the
// user gave, and it leaves invalid values for Validate to report.
//
// Cluster labels get spec.defaults.labels merged in (the cluster's own value
// wins), a cluster's mode defaults to spec.defaults.registration, and the
// clientID of a cluster whose mode is an Agent one to "auto" and its tokenTTL
// to spec.defaults.tokenTTL.
func Default(f *Fleet) {
	s := &f.Spec
	if s.Manager.Name == "" {
		s.Manager.Name = "manager" // the entry point is then clusters/manager/
	}
	if s.Manager.Namespace == "" {
		s.Manager.Namespace = "fleet-default" // Fleet's default workspace
	}
	if s.Registry.Layout == "" {
		s.Registry.Layout = LayoutStripHost // az acr import naming
	}
	if s.Source.Ref == "" {
		if s.Source.Kind == SourceOCI {
			s.Source.Ref = "latest" // OCIRepository's own default tag
		} else {
			s.Source.Ref = "main" // Git's and GitHub's default branch
		}
	}
	if s.Source.Interval == "" {
		s.Source.Interval = "1m" // flux bootstrap's default
	}
	if s.Source.Bootstrap == "" {
		s.Source.Bootstrap = BootstrapFlux // what `flux bootstrap` and the Flux Operator leave behind
	}
	if s.Encryption != nil && s.Encryption.SOPS != nil && s.Encryption.SOPS.SecretRef == "" {
		s.Encryption.SOPS.SecretRef = "sops-age" // the name Flux's docs use
	}
	for i := range s.Layers {
		l := &s.Layers[i]
		if l.Interval == "" {
			l.Interval = "10m" // flux bootstrap's default for Kustomizations
		}
		if l.Prune == nil {
			t := true // what GitOps users expect: deleting a file deletes the object
			l.Prune = &t
		}
	}
	defaultDeliveries(s)
	defaultArgoCD(s)
	defaultRegistrars(s)
	if s.Defaults.Registration == "" {
		s.Defaults.Registration = ModeAgent // Fleet's agent-initiated flow needs no credentials in Git
	}
	for i := range s.Clusters {
		c := &s.Clusters[i]
		if len(s.Defaults.Labels) > 0 {
			merged := make(map[string]string, len(s.Defaults.Labels)+len(c.Labels))
			for k, v := range s.Defaults.Labels {
				merged[k] = v
			}
			for k, v := range c.Labels {
				merged[k] = v // the cluster's own label wins
			}
			c.Labels = merged
		}
		if c.Registration.Mode == "" {
			c.Registration.Mode = s.Defaults.Registration
		}
		if m := c.ModeOf(); m != nil && m.Agent {
			if c.Registration.ClientID == "" {
				c.Registration.ClientID = "auto" // generated once, kept in fleet.lock.yaml
			}
			if c.Registration.TokenTTL == "" {
				c.Registration.TokenTTL = s.Defaults.TokenTTL
			}
			if c.Registration.TokenTTL == "" {
				c.Registration.TokenTTL = "240h" // newer Fleet rejects tokens without a TTL
			}
		}
	}
}
