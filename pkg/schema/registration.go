package schema

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Mode is one registration mode (spec.clusters[].registration.mode): the
// fields it reads, what the fleet needs for it and where its objects go.
// Modes is the one table of them; Default, Validate, Load, the JSON Schema,
// pkg/generate (which renders each mode's objects, keyed by Name) and the
// pipeline (client IDs, plaintext credentials) all read it. Adding a mode
// (Argo CD or Sveltos cluster Secrets) is one entry here, its render
// function in pkg/generate and its golden case.
type Mode struct {
	// Name is the value of registration.mode.
	Name string
	// Kubeconfig: registration.kubeconfig ({file: …} or {env: …}) is
	// required, checked as a kubeconfig and rendered into a Secret: the
	// output holds a credential, which render writes only SOPS-encrypted
	// (spec.encryption) or with --allow-plaintext-secrets.
	Kubeconfig bool
	// CACert: registration.caCert ({file: …} or {value: …}, PEM) is read.
	CACert bool
	// Agent: the cluster's fleet-agent registers itself with a token:
	// registration.clientID (default auto, generated once into the lock)
	// and tokenTTL (default spec.defaults.tokenTTL, else 240h) apply, and
	// spec.images must list the fleet-agent image its values pin.
	Agent bool
	// APIServerURL: spec.manager.apiServerURL is required (the agent or the
	// managed cluster calls the manager there).
	APIServerURL bool
	// Fleet: the cluster is a Fleet Cluster, so deliveries reach it,
	// ClusterGroups hold it and clusters[].agent schedules its fleet-agent.
	Fleet bool
	// Namespace is the manager namespace the mode's objects live in, which
	// manager/namespace.yaml declares.
	Namespace func(f *Fleet) string
	// Objects names what registering c in this mode puts on the manager,
	// rendered or made there by a controller, for the check that no two
	// objects of the fleet's managers collide (managers.go).
	Objects func(f *Fleet, c *Cluster) []Object
}

// VerrazzanoNamespace is where Verrazzano keeps its managed-cluster objects.
const VerrazzanoNamespace = "verrazzano-mc"

func fleetWorkspace(f *Fleet) string { return f.Spec.Manager.Namespace }

// Modes lists every registration mode, in the order messages name them.
var Modes = []Mode{
	{Name: ModeAgent, Agent: true, APIServerURL: true, Fleet: true, Namespace: fleetWorkspace,
		Objects: func(f *Fleet, c *Cluster) []Object {
			ns := f.Spec.Manager.Namespace
			return []Object{
				fleetClusterObject(f, c),
				{Kind: "ClusterRegistrationToken", Namespace: ns, Name: FleetToken(c.Name), What: "Fleet's registration token"},
				{Kind: "Secret", Namespace: ns, Name: FleetToken(c.Name), What: "the token Secret Fleet mints", Made: true},
			}
		}},
	{Name: ModeManager, Kubeconfig: true, Fleet: true, Namespace: fleetWorkspace,
		Objects: func(f *Fleet, c *Cluster) []Object {
			return []Object{fleetClusterObject(f, c),
				{Kind: "Secret", Namespace: f.Spec.Manager.Namespace, Name: FleetKubeconfigSecret(c.Name), What: "Fleet's kubeconfig Secret"}}
		}},
	{Name: ModeCAPI, Fleet: true, Namespace: fleetWorkspace,
		Objects: func(f *Fleet, c *Cluster) []Object {
			return []Object{fleetClusterObject(f, c),
				{Kind: "Secret", Namespace: f.Spec.Manager.Namespace, Name: FleetKubeconfigSecret(c.Name), What: "the kubeconfig Secret cluster-api makes", Made: true}}
		}},
	{Name: ModeVerrazzano, CACert: true, APIServerURL: true, Namespace: func(*Fleet) string { return VerrazzanoNamespace },
		Objects: func(_ *Fleet, c *Cluster) []Object {
			return []Object{
				{Kind: "VerrazzanoManagedCluster", Namespace: VerrazzanoNamespace, Name: c.Name, What: "Verrazzano's VerrazzanoManagedCluster"},
				{Kind: "Secret", Namespace: VerrazzanoNamespace, Name: VerrazzanoCASecret(c.Name), What: "Verrazzano's CA Secret"},
			}
		}},
}

func fleetClusterObject(f *Fleet, c *Cluster) Object {
	return Object{Kind: "Cluster", Namespace: f.Spec.Manager.Namespace, Name: c.Name, What: "Fleet's Cluster"}
}

// LookupMode returns the mode called name, or nil.
func LookupMode(name string) *Mode {
	for i := range Modes {
		if Modes[i].Name == name {
			return &Modes[i]
		}
	}
	return nil
}

// ModeOf returns c's mode, or nil when it has none that exists.
func (c *Cluster) ModeOf() *Mode { return LookupMode(c.Registration.Mode) }

// modeNames returns the names of the modes: those where keep is true, or
// all when keep is nil.
func modeNames(keep func(*Mode) bool) []string {
	var names []string
	for i := range Modes {
		if keep == nil || keep(&Modes[i]) {
			names = append(names, Modes[i].Name)
		}
	}
	return names
}

// registrationFields are the registration fields besides mode, each with the
// modes it applies to.
var registrationFields = []struct {
	name    string
	set     func(*Registration) bool
	applies func(*Mode) bool
}{
	{"kubeconfig", func(r *Registration) bool { return r.Kubeconfig != nil }, func(m *Mode) bool { return m.Kubeconfig }},
	{"caCert", func(r *Registration) bool { return r.CACert != nil }, func(m *Mode) bool { return m.CACert }},
	{"clientID", func(r *Registration) bool { return r.ClientID != "" }, func(m *Mode) bool { return m.Agent }},
	{"tokenTTL", func(r *Registration) bool { return r.TokenTTL != "" }, func(m *Mode) bool { return m.Agent }},
}

// PlaintextCredentials is the one rule about credentials in the output: a
// cluster whose mode renders its kubeconfig (Mode.Kubeconfig) needs
// spec.encryption.sops, which seals that Secret, unless the command line
// allows plaintext (--allow-plaintext-secrets, which fleet.yaml cannot
// say). It returns nil when no such cluster exists or SOPS is configured,
// else one error at the first such cluster's kubeconfig (Validate reports a
// spec.encryption without sops). `fleetgen validate` and render both apply it.
func (f *Fleet) PlaintextCredentials() *problem.FieldError {
	if e := f.Spec.Encryption; e != nil && e.SOPS != nil {
		return nil
	}
	var first = -1
	n := 0
	for i := range f.Spec.Clusters {
		if m := f.Spec.Clusters[i].ModeOf(); m != nil && m.Kubeconfig {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if first < 0 {
		return nil
	}
	c := &f.Spec.Clusters[first]
	who := "cluster " + c.Name + " registers"
	if n > 1 {
		who = fmt.Sprintf("clusters %s and %d more register", c.Name, n-1)
	}
	return f.At(problem.Other(fmt.Sprintf("spec.clusters[%d].registration.kubeconfig", first),
		"%s in mode %s, whose kubeconfig Secret would be written in plaintext because spec.encryption is not set: want spec.encryption.sops.ageRecipients (Secrets SOPS-encrypted for age, see docs/secrets.md), or pass --allow-plaintext-secrets",
		who, c.Registration.Mode))
}
