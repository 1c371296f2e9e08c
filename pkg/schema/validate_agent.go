package schema

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// quantityRE is the Kubernetes resource quantity syntax (the pattern the
// CRDs give int-or-string quantities).
var quantityRE = regexp.MustCompile(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)

// agents checks spec.clusters[].agent: only on clusters registered with
// Fleet, and each setting as the API server or the scheduler would check
// the agent's Deployment (Fleet copies them there unchecked).
func (v *validator) agents() {
	for i := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[i]
		a := c.Agent
		if a == nil {
			continue
		}
		p := fmt.Sprintf("spec.clusters[%d].agent", i)
		if m := c.ModeOf(); m != nil && !m.Fleet {
			v.add(problem.NotApplicable(p, "agent applies only to clusters registered with Fleet (mode agent, manager or capi), not %s: remove it", c.Registration.Mode))
			continue
		}
		for j, t := range a.Tolerations {
			v.toleration(fmt.Sprintf("%s.tolerations[%d]", p, j), t)
		}
		if a.Affinity != nil {
			v.affinity(p+".affinity", a.Affinity)
		}
		if a.Resources != nil {
			v.quantities(p+".resources.limits", a.Resources.Limits)
			v.quantities(p+".resources.requests", a.Resources.Requests)
		}
		if s := a.SchedulingCustomization; s != nil {
			if pc := s.PriorityClass; pc != nil {
				pp := p + ".schedulingCustomization.priorityClass"
				if pc.Value > 1_000_000_000 || pc.Value < -2_147_483_648 {
					v.add(problem.Other(pp+".value", "priority %d is out of range: want at most 1000000000 (higher values are reserved for system classes)", pc.Value))
				}
				switch pc.PreemptionPolicy {
				case "", "PreemptLowerPriority", "Never":
				default:
					v.add(problem.NotSupported(pp+".preemptionPolicy", "unsupported value %q: want PreemptLowerPriority or Never", pc.PreemptionPolicy))
				}
			}
			if b := s.PodDisruptionBudget; b != nil {
				pp := p + ".schedulingCustomization.podDisruptionBudget"
				if b.MinAvailable != "" && b.MaxUnavailable != "" {
					v.add(problem.Other(pp, "minAvailable and maxUnavailable exclude each other in a PodDisruptionBudget: want one"))
				}
				for _, x := range []struct{ name, val string }{{"minAvailable", b.MinAvailable}, {"maxUnavailable", b.MaxUnavailable}} {
					if x.val != "" && !intOrPercent(x.val) {
						v.add(problem.InvalidValue(pp+"."+x.name, "invalid %s %q: want a number of pods (e.g. 1) or a percentage (e.g. 50%%)", x.name, x.val))
					}
				}
			}
		}
	}
}

func intOrPercent(s string) bool {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	return err == nil && n >= 0 && (!strings.HasSuffix(s, "%") || n <= 100)
}

// toleration checks one toleration as the API server checks a Pod's.
func (v *validator) toleration(p string, t Toleration) {
	if t.Key != "" {
		if why := labelKey(t.Key); why != "" {
			v.add(problem.InvalidValue(p+".key", "invalid key %q: %s", t.Key, why))
		}
	}
	switch t.Operator {
	case "", "Equal":
		if t.Key == "" {
			v.add(problem.Other(p+".operator", "a toleration without a key must use operator Exists (it then tolerates every taint): want a key, or operator: Exists"))
		}
		if !labelValue(t.Value) {
			v.add(problem.InvalidValue(p+".value", "invalid value %q: want at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", t.Value))
		}
	case "Exists":
		if t.Value != "" {
			v.add(problem.Other(p+".value", "operator Exists takes no value: remove it, or use operator Equal"))
		}
	default:
		v.add(problem.NotSupported(p+".operator", "unsupported value %q: want Equal or Exists", t.Operator))
	}
	switch t.Effect {
	case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		v.add(problem.NotSupported(p+".effect", "unsupported value %q: want NoSchedule, PreferNoSchedule or NoExecute (or none for all)", t.Effect))
	}
	if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
		v.add(problem.NotApplicable(p+".tolerationSeconds", "tolerationSeconds applies only to effect NoExecute: remove it or set effect: NoExecute"))
	}
}

func (v *validator) affinity(p string, a *Affinity) {
	if n := a.NodeAffinity; n != nil {
		np := p + ".nodeAffinity"
		if n.Required != nil {
			rp := np + ".requiredDuringSchedulingIgnoredDuringExecution"
			if len(n.Required.NodeSelectorTerms) == 0 {
				v.add(problem.Required(rp+".nodeSelectorTerms", "nodeSelectorTerms are required: want at least one term"))
			}
			for i, t := range n.Required.NodeSelectorTerms {
				v.nodeTerm(fmt.Sprintf("%s.nodeSelectorTerms[%d]", rp, i), t)
			}
		}
		for i, t := range n.Preferred {
			tp := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", np, i)
			v.weight(tp+".weight", t.Weight)
			v.nodeTerm(tp+".preference", t.Preference)
		}
	}
	for _, x := range []struct {
		name string
		pa   *PodAffinity
	}{{"podAffinity", a.PodAffinity}, {"podAntiAffinity", a.PodAntiAffinity}} {
		if x.pa == nil {
			continue
		}
		pp := p + "." + x.name
		for i, t := range x.pa.Required {
			v.podTerm(fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", pp, i), t)
		}
		for i, t := range x.pa.Preferred {
			tp := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", pp, i)
			v.weight(tp+".weight", t.Weight)
			v.podTerm(tp+".podAffinityTerm", t.PodAffinityTerm)
		}
	}
}

func (v *validator) weight(p string, w int32) {
	if w < 1 || w > 100 {
		v.add(problem.Other(p, "weight %d is out of range: want 1 to 100", w))
	}
}

func (v *validator) nodeTerm(p string, t NodeSelectorTerm) {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		v.add(problem.Other(p, "an empty node selector term matches no node: want matchExpressions or matchFields"))
	}
	for i, r := range t.MatchExpressions {
		v.requirement(fmt.Sprintf("%s.matchExpressions[%d]", p, i), r, true)
	}
	for i, r := range t.MatchFields {
		v.requirement(fmt.Sprintf("%s.matchFields[%d]", p, i), r, true)
	}
}

func (v *validator) podTerm(p string, t PodAffinityTerm) {
	if t.TopologyKey == "" {
		v.add(problem.Required(p+".topologyKey", "topologyKey is required: want a node label key, e.g. kubernetes.io/hostname"))
	} else if why := labelKey(t.TopologyKey); why != "" {
		v.add(problem.InvalidValue(p+".topologyKey", "invalid topologyKey %q: %s", t.TopologyKey, why))
	}
	for _, s := range []struct {
		name string
		sel  *LabelSelector
	}{{"labelSelector", t.LabelSelector}, {"namespaceSelector", t.NamespaceSelector}} {
		if s.sel == nil {
			continue
		}
		v.labels(p+"."+s.name+".matchLabels", "selector", s.sel.MatchLabels, nil)
		for i, r := range s.sel.MatchExpressions {
			v.requirement(fmt.Sprintf("%s.%s.matchExpressions[%d]", p, s.name, i), r, false)
		}
	}
	for i, ns := range t.Namespaces {
		if !isDNSLabel(ns) {
			v.add(problem.InvalidValue(fmt.Sprintf("%s.namespaces[%d]", p, i), "invalid namespace %q: %s", ns, wantDNSLabel))
		}
	}
}

// requirement checks a node selector (node: Gt and Lt too) or label
// selector requirement.
func (v *validator) requirement(p string, r Requirement, node bool) {
	if r.Key == "" {
		v.add(problem.Required(p+".key", "key is required: want a label key"))
	} else if why := labelKey(r.Key); why != "" {
		v.add(problem.InvalidValue(p+".key", "invalid key %q: %s", r.Key, why))
	}
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) == 0 {
			v.add(problem.Other(p+".values", "operator %s needs values: want at least one", r.Operator))
		}
	case "Exists", "DoesNotExist":
		if len(r.Values) > 0 {
			v.add(problem.Other(p+".values", "operator %s takes no values: remove them", r.Operator))
		}
	case "Gt", "Lt":
		if !node {
			v.add(problem.NotSupported(p+".operator", "unsupported value %q: want In, NotIn, Exists or DoesNotExist", r.Operator))
			break
		}
		if len(r.Values) != 1 {
			v.add(problem.Other(p+".values", "operator %s takes exactly one integer value", r.Operator))
		} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			v.add(problem.Other(p+".values", "operator %s takes an integer value, not %q", r.Operator, r.Values[0]))
		}
	default:
		want := "In, NotIn, Exists or DoesNotExist"
		if node {
			want = "In, NotIn, Exists, DoesNotExist, Gt or Lt"
		}
		v.add(problem.NotSupported(p+".operator", "unsupported value %q: want %s", r.Operator, want))
	}
}

// quantities checks resource names and quantities.
func (v *validator) quantities(p string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		if why := labelKey(k); why != "" {
			v.add(problem.InvalidValue(p+"["+k+"]", "invalid resource name %q: want cpu, memory, ephemeral-storage or a qualified name", k))
		}
		if !quantityRE.MatchString(m[k]) {
			v.add(problem.InvalidValue(p+"["+k+"]", "invalid quantity %q for %s: want a Kubernetes quantity, e.g. 100m, 0.5 or 128Mi", m[k], k))
		}
	}
}
