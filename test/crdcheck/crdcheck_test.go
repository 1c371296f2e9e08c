package crdcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("crds/examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d examples, want the upstream set", len(files))
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range SplitDocuments(data) {
			n++
			if err := Validate(doc); err != nil {
				t.Errorf("%s document %d: %v", filepath.Base(f), i, err)
			}
		}
	}
	if n < 16 {
		t.Errorf("validated %d documents, want at least 16", n)
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	kinds, err := Kinds()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"fleet.cattle.io/v1alpha1/Cluster":                         false,
		"fleet.cattle.io/v1alpha1/ClusterGroup":                    false,
		"fleet.cattle.io/v1alpha1/ClusterRegistrationToken":        false,
		"source.toolkit.fluxcd.io/v1/GitRepository":                false,
		"source.toolkit.fluxcd.io/v1/OCIRepository":                false,
		"kustomize.toolkit.fluxcd.io/v1/Kustomization":             false,
		"clusters.verrazzano.io/v1alpha1/VerrazzanoManagedCluster": false,
		"fleet.cattle.io/v1alpha1/GitRepo":                         false,
		"fleet.cattle.io/v1alpha1/Policy":                          false,
		"cluster.kubernetes-fleet.io/v1/MemberCluster":             false,
		"cluster.kubernetes-fleet.io/v1beta1/MemberCluster":        false,
		"lib.projectsveltos.io/v1beta1/SveltosCluster":             false,
		"cluster.open-cluster-management.io/v1/ManagedCluster":     false,
	}
	for _, k := range kinds {
		if _, ok := want[k.String()]; ok {
			want[k.String()] = true
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("kind %s not loaded", k)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		doc  string
		want string // substring of the error
	}{
		"MemberCluster identity without kind": {
			doc: `apiVersion: cluster.kubernetes-fleet.io/v1
kind: MemberCluster
metadata: {name: a}
spec: {identity: {name: 00000000-0000-0000-0000-000000000000}}
`,
			want: "spec.identity.kind: Required value",
		},
		"MemberCluster without identity": {
			doc: `apiVersion: cluster.kubernetes-fleet.io/v1
kind: MemberCluster
metadata: {name: a}
spec: {heartbeatPeriodSeconds: 60}
`,
			want: "spec.identity: Required value",
		},
		"unknown SveltosCluster field": {
			doc: `apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {name: a, namespace: projectsveltos}
spec: {kubeconfigName: a-sveltos-kubeconfig, kubeconfigKey: value}
`,
			want: "spec.kubeconfigKey: unknown field",
		},
		"SveltosCluster of an old version": {
			doc: `apiVersion: lib.projectsveltos.io/v1alpha1
kind: SveltosCluster
metadata: {name: a, namespace: projectsveltos}
spec: {}
`,
			want: "no CRD serves this kind",
		},
		"hubAcceptsClient not a boolean": {
			doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: a}
spec: {hubAcceptsClient: "true"}
`,
			want: "spec.hubAcceptsClient",
		},
		"unknown field in spec": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata: {name: a, namespace: clusters}
spec: {clientID: x, clientId: y}
`,
			want: "spec.clientId: unknown field",
		},
		"unknown top-level field": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: ClusterRegistrationToken
metadata: {name: a, namespace: clusters}
spec: {ttl: 1h}
extra: 1
`,
			want: "extra: unknown field",
		},
		"wrong type": {
			doc: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a, namespace: flux-system}
spec: {interval: 10m, prune: "yes", sourceRef: {kind: GitRepository, name: x}}
`,
			want: "spec.prune",
		},
		"bad enum": {
			doc: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a, namespace: flux-system}
spec: {interval: 10m, prune: true, sourceRef: {kind: HelmChart, name: x}}
`,
			want: "spec.sourceRef.kind",
		},
		"bad duration pattern": {
			doc: `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: a, namespace: flux-system}
spec: {interval: 1d, url: https://example.com/x.git}
`,
			want: "spec.interval",
		},
		"missing required": {
			doc: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a, namespace: flux-system}
spec: {interval: 10m, sourceRef: {kind: GitRepository, name: x}}
`,
			want: "spec.prune",
		},
		"unknown field in metadata": {
			doc: `apiVersion: clusters.verrazzano.io/v1alpha1
kind: VerrazzanoManagedCluster
metadata: {name: a, namespace: verrazzano-mc, label: {a: b}}
spec: {caSecret: x}
`,
			want: "metadata",
		},
		"bad name": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: ClusterGroup
metadata: {name: Not_Valid, namespace: clusters}
spec: {selector: {matchLabels: {env: prod}}}
`,
			want: "metadata.name",
		},
		"secret unknown field": {
			doc: `apiVersion: v1
kind: Secret
metadata: {name: a, namespace: b}
dat: {value: eA==}
`,
			want: "dat",
		},
		"secret bad base64": {
			doc: `apiVersion: v1
kind: Secret
metadata: {name: a, namespace: b}
data: {value: "not base64!"}
`,
			want: "illegal base64",
		},
		"unknown kind": {
			doc: `apiVersion: example.com/v1
kind: Widget
metadata: {name: a}
`,
			want: "no CRD serves",
		},
		"served version gone": {
			doc: `apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: GitRepository
metadata: {name: a, namespace: flux-system}
spec: {interval: 1m, url: https://example.com/x.git}
`,
			want: "no CRD serves",
		},
		"cel rule": {
			doc: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: a, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  sourceRef: {kind: GitRepository, name: x}
  kubeConfig: {}
`,
			want: "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef",
		},
		"gitrepo cel rule": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: a, namespace: fleet-default}
spec: {repo: https://example.com/x.git, pollingInterval: 1d}
`,
			want: "crds/fleet/fleet-crds.yaml: spec.pollingInterval: Invalid value: \"1d\": must be a valid Go duration",
		},
		"gitrepo target unknown field": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: a, namespace: fleet-default}
spec:
  repo: https://example.com/x.git
  targets: [{name: a, clusterSelector: {env: prod}}]
`,
			want: "spec.targets[0].clusterSelector.env: unknown field",
		},
		"gitrepo without repo": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: a, namespace: fleet-default}
spec: {branch: main}
`,
			want: "spec.repo: Required value",
		},
		"policy fields under spec": {
			doc: `apiVersion: fleet.cattle.io/v1alpha1
kind: Policy
metadata: {name: a, namespace: fleet-default}
spec: {allowedServiceAccounts: [x]}
`,
			want: "spec: unknown field",
		},
		"namespace with namespace": {
			doc: `apiVersion: v1
kind: Namespace
metadata: {name: a, namespace: b}
`,
			want: "cluster-scoped",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := Validate([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Validate: no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	t.Parallel()
	docs := SplitDocuments([]byte("# c\n---\na: 1\n---\n# only comment\n---\nb: 2\n"))
	if len(docs) != 2 || string(docs[0]) != "a: 1\n" || string(docs[1]) != "b: 2\n" {
		t.Errorf("SplitDocuments = %q", docs)
	}
}

// TestBothFleetVersions: Fleet kinds are checked against v0.16.1 and
// v0.13.15 alike, so a field only the newer release knows fails, naming the
// older CRD, and a kind only the newer one serves still validates.
func TestBothFleetVersions(t *testing.T) {
	t.Parallel()
	newer := `apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata: {name: a, namespace: clusters}
spec:
  clientID: x
  agentPullSecrets: [{name: regcred}]
`
	err := Validate([]byte(newer))
	if err == nil || !strings.Contains(err.Error(), "crds/compat/fleet-v0.13.15/fleet-crds.yaml") || strings.Contains(err.Error(), "crds/fleet/fleet-crds.yaml") {
		t.Errorf("Validate(Cluster with a v0.16-only field) = %v, want an error from the v0.13.15 CRD only", err)
	}
	both := `apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata: {name: a, namespace: clusters}
spec: {clientID: x}
`
	if err := Validate([]byte(both)); err != nil {
		t.Errorf("Validate(Cluster) = %v", err)
	}
	m, err := load()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Cluster", "ClusterGroup", "ClusterRegistrationToken", "GitRepo", "Policy"} {
		var sources []string
		for _, s := range m[GVK{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: kind}] {
			sources = append(sources, s.source)
		}
		want := []string{"crds/compat/fleet-v0.13.15/fleet-crds.yaml", "crds/fleet/fleet-crds.yaml"}
		if strings.Join(sources, " ") != strings.Join(want, " ") {
			t.Errorf("%s is checked against %v, want %v", kind, sources, want)
		}
	}
	if got := len(m[GVK{Group: "fleet.cattle.io", Version: "v1alpha1", Kind: "Schedule"}]); got != 1 {
		t.Errorf("Schedule (new in v0.16) has %d CRDs, want 1", got)
	}
}

// TestGitRepoAndPolicy: a GitRepo with every field fleetgen writes and a
// Policy validate against Fleet v0.16.1 and v0.13.15 (Policy is in both),
// and a field only v0.16 knows fails against v0.13.15 alone.
func TestGitRepoAndPolicy(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"gitrepo": `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: monitoring, namespace: fleet-default}
spec:
  repo: https://example.com/platform.git
  branch: main
  bundles: [{base: monitoring, options: fleet-prod.yaml}, {base: logging}]
  targets:
  - {name: prod-eu, clusterGroup: production, clusterSelector: {matchLabels: {region: eu}}}
  - {name: rest, clusterSelector: {}, clusterGroupSelector: {}}
  - {name: one, clusterName: edge-7}
  helmSecretName: acr-helm
  helmRepoURLRegex: ^oci://contoso\.azurecr\.io/
  clientSecretName: git
  serviceAccount: deployer
  pollingInterval: 30s
  correctDrift: {enabled: true, force: true, keepFailHistory: true}
  targetNamespace: monitoring
  paused: true
`,
		"gitrepo paths and revision": `apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata: {name: security, namespace: fleet-default}
spec:
  repo: git@github.com:contoso/security.git
  revision: v1.2.3
  paths: [policies/*, audit]
  targets: [{name: a, clusterName: edge-1}]
`,
		"policy": `apiVersion: fleet.cattle.io/v1alpha1
kind: Policy
metadata: {name: contoso, namespace: fleet-default}
allowedServiceAccounts: [deployer]
gitRepo:
  allowedClientSecretNames: [git]
  allowedRepoPatterns: ["https://example\\.com/platform\\.git"]
`,
	} {
		if err := Validate([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	newer := `apiVersion: fleet.cattle.io/v1alpha1
kind: Policy
metadata: {name: a, namespace: fleet-default}
allowNamespaceCreation: true
`
	err := Validate([]byte(newer))
	if err == nil || !strings.Contains(err.Error(), "crds/compat/fleet-v0.13.15/fleet-crds.yaml: allowNamespaceCreation: unknown field") || strings.Contains(err.Error(), "crds/fleet/fleet-crds.yaml") {
		t.Errorf("Validate(Policy with a v0.16-only field) = %v, want an error from the v0.13.15 CRD only", err)
	}
}
