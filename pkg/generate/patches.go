package generate

import "encoding/json"

// The shapes of a Flux Kustomization's spec.patches, as fleetgen writes them
// (the same names and fields as branch h-helm's helm.go: on a merge, keep
// one copy).

// patch is one entry of a Flux Kustomization's spec.patches.
type patch struct {
	Patch  string       `json:"patch"`
	Target *patchTarget `json:"target,omitempty"`
}

type patchTarget struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// jsonPatch writes ops as an RFC 6902 patch, indented JSON: the patch
// string Flux's kustomize-controller applies.
func jsonPatch(ops ...jsonOp) (string, error) {
	b, err := json.MarshalIndent(ops, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
