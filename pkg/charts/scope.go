package charts

import "strings"

// clusterScoped are the built-in kinds that have no namespace, by group
// ("" for the core group): what Helm's kube client learns from the cluster's
// REST mapping, fixed here for the Kubernetes version the libraries serve.
var clusterScoped = map[string]map[string]bool{
	"":                             {"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true},
	"rbac.authorization.k8s.io":    {"ClusterRole": true, "ClusterRoleBinding": true},
	"apiextensions.k8s.io":         {"CustomResourceDefinition": true},
	"storage.k8s.io":               {"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "VolumeAttributesClass": true},
	"scheduling.k8s.io":            {"PriorityClass": true},
	"admissionregistration.k8s.io": {"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true},
	"apiregistration.k8s.io":       {"APIService": true},
	"networking.k8s.io":            {"IngressClass": true, "IPAddress": true, "ServiceCIDR": true},
	"node.k8s.io":                  {"RuntimeClass": true},
	"certificates.k8s.io":          {"CertificateSigningRequest": true, "ClusterTrustBundle": true},
	"flowcontrol.apiserver.k8s.io": {"FlowSchema": true, "PriorityLevelConfiguration": true},
	"resource.k8s.io":              {"DeviceClass": true, "ResourceSlice": true},
	"policy":                       {"PodSecurityPolicy": true},
	"authentication.k8s.io":        {"TokenReview": true, "SelfSubjectReview": true},
	"authorization.k8s.io":         {"SubjectAccessReview": true, "SelfSubjectAccessReview": true, "SelfSubjectRulesReview": true},
}

// ClusterScoped reports whether objects of kind in apiVersion have no
// namespace: a built-in cluster-scoped kind, or a custom kind whose
// CustomResourceDefinition (in crds, "group/Kind" → true) says so.
func ClusterScoped(apiVersion, kind string, crds map[string]bool) bool {
	group := ""
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		group = apiVersion[:i]
	}
	return clusterScoped[group][kind] || crds[group+"/"+kind]
}

// InReleaseNamespace returns the objects as helm-controller applies them:
// an object of a namespaced kind that the chart leaves without a namespace
// goes to the release's namespace (Release.HelmNamespace), as Helm's kube
// client puts it there. Objects are shared (Memo): one given a namespace is
// a copy. crds are the cluster-scoped custom kinds, as ClusterScoped reads
// them; the chart's own CRDs are added.
func (r *Result) InReleaseNamespace(ns string, crds map[string]bool) []*Object {
	own := map[string]bool{}
	for k, v := range crds {
		own[k] = v
	}
	for _, o := range r.Objects {
		if o.CRD {
			group := str(o.Map, "spec", "group")
			kind := str(o.Map, "spec", "names", "kind")
			own[group+"/"+kind] = str(o.Map, "spec", "scope") == "Cluster"
		}
	}
	out := make([]*Object, len(r.Objects))
	for i, o := range r.Objects {
		out[i] = o
		if ns == "" || str(o.Map, "metadata", "namespace") != "" {
			continue
		}
		av, _ := o.Map["apiVersion"].(string)
		kind, _ := o.Map["kind"].(string)
		if ClusterScoped(av, kind, own) {
			continue
		}
		c := *o
		c.Map = make(map[string]any, len(o.Map))
		for k, v := range o.Map {
			c.Map[k] = v
		}
		md := map[string]any{}
		if old, ok := o.Map["metadata"].(map[string]any); ok {
			for k, v := range old {
				md[k] = v
			}
		}
		md["namespace"] = ns
		c.Map["metadata"] = md
		out[i] = &c
	}
	return out
}
