package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"fleetgen.dev/fleetgen/internal/strictyaml"
	"fleetgen.dev/fleetgen/pkg/layout"
)

// JSONSchemaID is the $id of the JSON Schema of fleet.yaml.
const JSONSchemaID = "https://fleetgen.dev/schema/v1alpha1/fleet.schema.json"

// JSONSchema returns a JSON Schema (draft 2020-12) of fleet.yaml, for editors
// (yaml-language-server) and other tools. It is generated from the Fleet types
// (field names, nesting, strictness: unknown fields are rejected) and
// fieldDocs, which holds what Validate enforces per field with the same
// patterns: enums, patterns, required fields, defaults, descriptions. The
// schema catches what can be checked field by field; Validate remains the
// authority (references between fields, files, layer builds).
func JSONSchema() ([]byte, error) {
	root := schemaFor("", reflect.TypeOf(Fleet{})).schema
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = JSONSchemaID
	root["title"] = "fleetgen Fleet (" + APIVersion + ")"
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	return append(b, '\n'), nil
}

// fieldDoc is what the schema says about one field beyond its Go type. Paths
// are field paths with list indexes left out: spec.clusters[].name.
type fieldDoc struct {
	desc     string
	required bool
	enum     []string
	pattern  string
	maxLen   int
	def      any
	forms    int // FileRef fields: which of file, value, env are accepted
	// example is a value of the field, for the schema's examples and
	// `fleetgen explain`. Every field has one: explicit here, or derived
	// (an enum's first value, a boolean's non-default, an object's from its
	// fields; see Explain).
	example any
	extra   map[string]any
}

var (
	nameDoc = func(desc string, example string) fieldDoc {
		return fieldDoc{desc: desc + " A DNS-1123 label: lower case letters, digits and '-'.", required: true, pattern: dnsLabelRE.String(), maxLen: 63, example: example}
	}
	durationDoc = func(desc string, def any, example string) fieldDoc {
		return fieldDoc{desc: desc + " A Flux duration: a number and unit ms, s, m or h, e.g. 30s, 10m, 1h30m.", pattern: durationRE.String(), def: def, example: example}
	}
	labelsDoc = func(desc string, example map[string]any) fieldDoc {
		return fieldDoc{desc: desc, example: example, extra: map[string]any{
			"additionalProperties": map[string]any{"type": "string", "maxLength": 63, "pattern": `^(` + strings.TrimSuffix(strings.TrimPrefix(labelNameRE.String(), "^"), "$") + `)?$`},
		}}
	}
	modes = modeNames(nil)
	// exampleAgeRecipient is an age public key, for examples only.
	exampleAgeRecipient = "age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8"
)

var fieldDocs = map[string]fieldDoc{
	"":              {desc: "A fleet of Kubernetes clusters: fleetgen compiles it into the manifests Rancher Fleet, Verrazzano and Flux reconcile."},
	"apiVersion":    {desc: "The version of this format.", required: true, enum: []string{APIVersion}},
	"kind":          {desc: "Always " + Kind + ".", required: true, enum: []string{Kind}},
	"metadata":      {desc: "Names the fleet.", required: true, example: map[string]any{"name": "contoso"}},
	"metadata.name": nameDoc("The fleet's name.", "contoso"),
	"spec": {desc: "The fleet's desired state.", required: true, example: map[string]any{
		"registry": map[string]any{"host": "contoso.azurecr.io"},
		"source":   map[string]any{"kind": "git", "url": "ssh://git@github.com/contoso/fleet-gitops.git"},
		"layers":   []any{map[string]any{"name": "apps", "path": "./apps"}},
		"clusters": []any{map[string]any{"name": "prod-eu-1", "labels": map[string]any{"env": "prod"}, "registration": map[string]any{"mode": "capi"}}},
	}},

	"spec.manager":              {desc: "The management (\"upstream\") cluster that runs Fleet.", example: map[string]any{"apiServerURL": "https://fleet.contoso.example:6443", "apiServerCA": map[string]any{"file": "certs/manager-ca.pem"}}},
	"spec.manager.name":         {desc: "The manager's name; its Flux entry point is " + layout.ClusterDir("<name>") + "/.", def: "manager", pattern: dnsLabelRE.String(), maxLen: 63, example: "manager"},
	"spec.manager.namespace":    {desc: "The Fleet workspace for Cluster, token and Secret objects.", def: "fleet-default", pattern: dnsLabelRE.String(), maxLen: 63, example: "clusters"},
	"spec.manager.apiServerURL": {desc: "The manager's API server, https://HOST[:PORT]. Required when any cluster uses mode agent or verrazzano.", pattern: `^https://`, example: "https://fleet.contoso.example:6443"},
	"spec.manager.apiServerCA":  {desc: "The manager's CA certificate (PEM): {file: PATH} relative to fleet.yaml, or {value: PEM}.", forms: formFile | formValue, example: map[string]any{"file": "certs/manager-ca.pem"}},

	"spec.registry":          {desc: "The private registry every image is mirrored to.", required: true, example: map[string]any{"host": "contoso.azurecr.io"}},
	"spec.registry.host":     {desc: "HOST[:PORT] of the registry, e.g. contoso.azurecr.io.", required: true, example: "contoso.azurecr.io"},
	"spec.registry.prefix":   {desc: "A repository prefix for every mirrored image, e.g. mirror or team/mirror.", def: "", example: "mirror"},
	"spec.registry.layout":   {desc: "How source images are named in the registry: strip-host (the naming of az acr import) or preserve-host.", enum: []string{LayoutStripHost, LayoutPreserveHost}, def: LayoutStripHost},
	"spec.registry.insecure": {desc: "Talk plain HTTP to the registry (local registries only).", def: false},

	"spec.source": {desc: "Where every cluster's Flux reads the rendered tree.", required: true, example: map[string]any{"kind": "git", "url": "ssh://git@github.com/contoso/fleet-gitops.git", "ref": "main"}, extra: map[string]any{
		"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": SourceOCI}}, "required": []string{"kind"}},
		"then": map[string]any{"properties": map[string]any{"url": map[string]any{"pattern": `^oci://`}}},
		"else": map[string]any{"properties": map[string]any{"url": map[string]any{"pattern": `^(https?|ssh)://`}}},
	}},
	"spec.source.kind":      {desc: "git or oci.", required: true, enum: []string{SourceGit, SourceOCI}},
	"spec.source.url":       {desc: "git: https://, http:// or ssh:// (never scp-style git@host:repo); oci: oci://HOST/REPOSITORY.", required: true, pattern: `^(https?|ssh|oci)://`, example: "ssh://git@github.com/contoso/fleet-gitops.git"},
	"spec.source.ref":       {desc: "The branch (git, default main) or tag (oci, default latest).", example: "main"},
	"spec.source.secretRef": {desc: "The Secret with the source's credentials, in flux-system.", example: "flux-system"},
	"spec.source.interval":  durationDoc("How often Flux checks the source.", "1m", "5m"),
	"spec.source.insecure":  {desc: "oci only: plain HTTP (local registries).", def: false},
	"spec.source.path":      {desc: "Where the rendered tree sits inside the source; default its root.", def: "", example: "gitops"},
	"spec.source.bootstrap": {desc: "flux: each cluster's Flux was bootstrapped at " + layout.ClusterDir("<name>") + "/ and fleetgen's Kustomizations read its source flux-system; none: fleetgen writes each cluster's own source (" + layout.ClusterSource.Path("<name>") + ").", enum: []string{"flux", "none"}, def: "flux"},

	"spec.encryption":                      {desc: "How credential Secrets are written: sealed with SOPS for Flux to decrypt.", example: map[string]any{"sops": map[string]any{"ageRecipients": []any{exampleAgeRecipient}}}},
	"spec.encryption.sops":                 {desc: "SOPS encryption for age recipients, as Flux's kustomize-controller decrypts it.", example: map[string]any{"ageRecipients": []any{exampleAgeRecipient}}},
	"spec.encryption.sops.ageRecipients":   {desc: "age public keys (age1…) to encrypt for; never a secret key.", required: true, extra: map[string]any{"minItems": 1}, example: []any{exampleAgeRecipient}},
	"spec.encryption.sops.ageRecipients[]": {pattern: `^age1[02-9ac-hj-np-z]+$`},
	"spec.encryption.sops.secretRef":       {desc: "The Secret in flux-system that holds the age key.", def: "sops-age", example: "sops-age"},

	"spec.images":   {desc: "Extra images to mirror: bootstrap images, fleet-agent (needed when any cluster registers in mode agent), Helm charts as oci://.", example: []any{"docker.io/rancher/fleet-agent:v0.16.1", "ghcr.io/kubereboot/kured:1.12.0"}},
	"spec.images[]": {desc: "An image reference, e.g. ghcr.io/kubereboot/kured:1.12.0."},

	"spec.layers":              {desc: "Flux Kustomizations rendered for each selected cluster.", example: []any{map[string]any{"name": "infrastructure", "path": "./infrastructure/${env}"}}},
	"spec.layers[].name":       nameDoc("The layer's name, unique.", "infrastructure"),
	"spec.layers[].path":       {desc: "A folder relative to fleet.yaml (the source root); ${cluster} and ${LABEL} are substituted per cluster.", required: true, example: "./infrastructure/${env}"},
	"spec.layers[].interval":   durationDoc("How often Flux reconciles the layer.", "10m", "5m"),
	"spec.layers[].prune":      {desc: "Delete objects whose manifests were removed.", def: true},
	"spec.layers[].wait":       {desc: "Wait for the layer's objects to be ready.", def: false},
	"spec.layers[].timeout":    durationDoc("How long Flux waits for the layer.", nil, "5m"),
	"spec.layers[].dependsOn":  {desc: "Other layers (by name) Flux applies first; they must be selected for every cluster this one is.", example: []any{"infrastructure"}},
	"spec.layers[].selector":   labelsDoc("Only clusters whose labels match all pairs get the layer; none means every cluster.", map[string]any{"env": "prod"}),
	"spec.layers[].substitute": {desc: "Extra postBuild.substitute entries.", extra: map[string]any{"propertyNames": map[string]any{"pattern": substVarRE.String()}, "additionalProperties": map[string]any{"type": "string"}}, example: map[string]any{"team": "platform"}},

	"spec.groups":            {desc: "Fleet ClusterGroups.", example: []any{map[string]any{"name": "production", "selector": map[string]any{"env": "prod"}}}},
	"spec.groups[].name":     nameDoc("The group's name, unique.", "production"),
	"spec.groups[].selector": labelsDoc("The labels a cluster needs to be in the group.", map[string]any{"env": "prod"}),

	"spec.defaults":              {desc: "Applied to every cluster that does not say otherwise.", example: map[string]any{"labels": map[string]any{"org": "contoso"}, "registration": "agent", "tokenTTL": "240h"}},
	"spec.defaults.labels":       labelsDoc("Labels every cluster gets; a cluster's own value wins.", map[string]any{"org": "contoso"}),
	"spec.defaults.registration": {desc: "The registration mode of a cluster that names none.", enum: modes, def: ModeAgent},
	"spec.defaults.tokenTTL":     durationDoc("The registration token TTL of agent clusters; > 0 (newer Fleet rejects tokens without a TTL).", "240h", "720h"),

	"spec.clusters":                           {desc: "The downstream clusters.", required: true, example: []any{map[string]any{"name": "prod-eu-1", "labels": map[string]any{"env": "prod", "region": "eu"}, "registration": map[string]any{"mode": "manager", "kubeconfig": map[string]any{"file": "kubeconfigs/prod-eu-1.yaml"}}}}},
	"spec.clusters[].name":                    nameDoc("The cluster's name, unique, not the manager's.", "prod-eu-1"),
	"spec.clusters[].labels":                  labelsDoc("The cluster's labels: Fleet targets by them, layers select by them and substitute them as ${LABEL}. Not "+FleetShardLabel+" (from spec.shards) nor Flux's kustomize.toolkit.fluxcd.io/name and /namespace: the live objects get those.", map[string]any{"env": "prod", "region": "eu"}),
	"spec.clusters[].registration":            {desc: "How the cluster registers with the manager.", example: map[string]any{"mode": "manager", "kubeconfig": map[string]any{"file": "kubeconfigs/prod-eu-1.yaml"}}},
	"spec.clusters[].registration.mode":       {desc: "agent: fleet-agent registers itself with a token; manager: Fleet uses a kubeconfig; capi: cluster-api made the kubeconfig Secret; verrazzano: a VerrazzanoManagedCluster. Default spec.defaults.registration.", enum: modes, example: "manager"},
	"spec.clusters[].registration.kubeconfig": {desc: "mode manager: the cluster's kubeconfig, {file: PATH} or {env: FLEETGEN_KUBECONFIG_…}.", forms: formFile | formEnv, example: map[string]any{"file": "kubeconfigs/prod-eu-1.yaml"}},
	"spec.clusters[].registration.clientID":   {desc: "mode agent: the client ID; auto generates one, kept in fleet.lock.yaml.", def: "auto", example: "auto"},
	"spec.clusters[].registration.tokenTTL":   durationDoc("mode agent: the registration token TTL; default spec.defaults.tokenTTL.", nil, "24h"),
	"spec.clusters[].registration.caCert":     {desc: "mode verrazzano: the managed cluster's CA (PEM), {file: PATH} or {value: PEM}; none means a well-known CA.", forms: formFile | formValue, example: map[string]any{"file": "certs/managed1-ca.pem"}},
	"spec.clusters[].kubernetesVersion":       {desc: "The cluster's Kubernetes version, 1.33 or v1.33.4: what the Helm charts of its HelmReleases render against (.Capabilities.KubeVersion). Default: the version fleetgen's Kubernetes libraries serve (docs/mirroring.md).", pattern: kubeVersionRE.String(), example: "1.33"},
}

var fileRefType = reflect.TypeOf(FileRef{})

// node is one field of the schema: its JSON Schema and, for explain, its
// fields in the order of the Go type.
type node struct {
	path   string
	schema map[string]any
	names  []string // an object's fields, in order
	props  map[string]*node
	items  *node // a list's element
}

// schemaFor builds the schema of a value of type t at path.
func schemaFor(path string, t reflect.Type) *node {
	doc := fieldDocs[path]
	n := &node{path: path}
	var s map[string]any
	switch {
	case t.Kind() == reflect.Pointer:
		return schemaFor(path, t.Elem())
	case t == fileRefType:
		n = fileRefNode(path, doc)
		s = n.schema
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		n.props = map[string]*node{}
		var required []string
		for _, f := range strictyaml.Fields(t) {
			p := strictyaml.Join(path, f.Name)
			c := schemaFor(p, t.Field(f.Index).Type)
			props[f.Name], n.props[f.Name] = c.schema, c
			n.names = append(n.names, f.Name)
			if fieldDocs[p].required {
				required = append(required, f.Name)
			}
		}
		s = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
	case t.Kind() == reflect.Slice:
		n.items = schemaFor(path+"[]", t.Elem())
		s = map[string]any{"type": "array", "items": n.items.schema}
	case t.Kind() == reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	case t.Kind() == reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int32 || t.Kind() == reflect.Int64:
		s = map[string]any{"type": "integer"}
	default:
		s = map[string]any{"type": "string"}
	}
	if doc.desc != "" {
		s["description"] = doc.desc
	}
	if doc.enum != nil {
		s["enum"] = doc.enum
	}
	if doc.pattern != "" {
		s["pattern"] = doc.pattern
	}
	if doc.maxLen > 0 {
		s["maxLength"] = doc.maxLen
	}
	if doc.def != nil {
		s["default"] = doc.def
	}
	if doc.example != nil {
		s["examples"] = []any{doc.example}
	}
	for k, v := range doc.extra {
		s[k] = v
	}
	n.schema = s
	return n
}

// fileRefNode accepts exactly one of the forms a field takes. The example of
// each form is the field's own where it has that form.
func fileRefNode(path string, doc fieldDoc) *node {
	forms := doc.forms
	ex := func(form, fallback string) []any {
		if m, ok := doc.example.(map[string]any); ok {
			if v, ok := m[form].(string); ok {
				return []any{v}
			}
		}
		return []any{fallback}
	}
	n := &node{path: path, props: map[string]*node{}}
	props := map[string]any{}
	add := func(name string, s map[string]any) {
		props[name] = s
		n.names = append(n.names, name)
		n.props[name] = &node{path: strictyaml.Join(path, name), schema: s}
	}
	if forms&formFile != 0 {
		add("file", map[string]any{"type": "string", "minLength": 1, "description": "A file relative to the folder of fleet.yaml.", "examples": ex("file", "certs/ca.pem")})
	}
	if forms&formValue != 0 {
		add("value", map[string]any{"type": "string", "minLength": 1, "description": "The content inline.", "examples": ex("value", "-----BEGIN CERTIFICATE-----\n…\n-----END CERTIFICATE-----\n")})
	}
	if forms&formEnv != 0 {
		add("env", map[string]any{"type": "string", "pattern": envNameRE.String(), "description": "An environment variable holding the content; only names starting with FLEETGEN_KUBECONFIG_ (or the prefix given on the command line).", "examples": ex("env", "FLEETGEN_KUBECONFIG_PROD_EU_1")})
	}
	n.schema = map[string]any{"type": "object", "properties": props, "additionalProperties": false, "minProperties": 1, "maxProperties": 1}
	return n
}
