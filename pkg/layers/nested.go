package layers

// appliedKey is a Flux Kustomization object as one cluster receives it.
type appliedKey struct {
	cluster string
	obj     *Object
}

// applied records that the followed Kustomization o applies s in cluster.
func (m *Model) applied(cluster string, o *Object, s *Set) {
	if m.applies == nil {
		m.applies = map[appliedKey]*Set{}
	}
	m.applies[appliedKey{cluster, o}] = s
}

// Applies returns the set the Flux Kustomization o applies in cluster: o is
// an object of a set of the cluster's closure (Closure) that the model
// followed. Nil when it did not follow o (its source is not fleetgen's, its
// folder does not build, it nests too deep: Warnings and Check say why), and
// for any other object. Render reads it to pin the images of what o applies
// through the Kustomization that applies o (SPEC §3).
func (m *Model) Applies(cluster string, o *Object) *Set {
	return m.applies[appliedKey{cluster, o}]
}
