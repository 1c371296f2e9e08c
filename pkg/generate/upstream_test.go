package generate_test

import (
	"path"
	"sort"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/test/crdcheck"
	"fleetgen.dev/fleetgen/test/synthetic"
)

// upstreamType returns a new upstream Go object for apiVersion/kind, or nil
// when there is no Go type in our dependencies (VerrazzanoManagedCluster,
// KubeFleet's MemberCluster, Sveltos's SveltosCluster, OCM's
// ManagedCluster: their modules link controller-runtime or the project's
// whole controller tree; crdcheck's schema and pruning checks, what the API
// server applies, cover them: noGoType).
func upstreamType(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "fleet.cattle.io/v1alpha1/Cluster":
		return &fleetv1.Cluster{}
	case "fleet.cattle.io/v1alpha1/ClusterRegistrationToken":
		return &fleetv1.ClusterRegistrationToken{}
	case "fleet.cattle.io/v1alpha1/ClusterGroup":
		return &fleetv1.ClusterGroup{}
	case "fleet.cattle.io/v1alpha1/GitRepo":
		return &fleetv1.GitRepo{}
	case "fleet.cattle.io/v1alpha1/Policy":
		return &fleetv1.Policy{}
	case "source.toolkit.fluxcd.io/v1/GitRepository":
		return &sourcev1.GitRepository{}
	case "source.toolkit.fluxcd.io/v1/OCIRepository":
		return &sourcev1.OCIRepository{}
	case "kustomize.toolkit.fluxcd.io/v1/Kustomization":
		return &kustomizev1.Kustomization{}
	case "kustomize.config.k8s.io/v1beta1/Kustomization":
		return &kusttypes.Kustomization{}
	}
	return nil
}

// checkObject validates one rendered document against the CRDs (or strict
// core types) and decodes it strictly into its upstream Go type.
func checkObject(t testing.TB, name string, doc []byte) {
	t.Helper()
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if tm.Kind != "Kustomization" || tm.APIVersion != "kustomize.config.k8s.io/v1beta1" {
		if err := crdcheck.Validate(doc); err != nil && !onlyNewerFleet(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	obj := upstreamType(tm.APIVersion, tm.Kind)
	if obj == nil {
		if !noGoType[tm.Kind] {
			t.Errorf("%s: no upstream type for %s %s", name, tm.APIVersion, tm.Kind)
		}
		return
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Errorf("%s: strict decode into %T: %v", name, obj, err)
	}
}

// noGoType are the kinds fleetgen renders that upstreamType has no Go type
// for.
var noGoType = map[string]bool{"VerrazzanoManagedCluster": true, "MemberCluster": true, "SveltosCluster": true, "ManagedCluster": true}

// newerFleet is the one thing fleetgen renders that Fleet v0.13 does not
// know: spec.clusters[].agent.schedulingCustomization (Fleet v0.14+), which
// docs/fleet-yaml.md says v0.13 drops. Everything else validates against
// v0.16.1 and v0.13.15 alike.
const newerFleet = "crds/compat/fleet-v0.13.15/fleet-crds.yaml: spec.agentSchedulingCustomization: unknown field (pruned by the API server)"

// onlyNewerFleet reports whether err is crdcheck's report of newerFleet and
// nothing else.
func onlyNewerFleet(err error) bool {
	return err.Error() == "fleet.cattle.io/v1alpha1/Cluster: "+newerFleet
}

func TestRenderedObjectsValidate(t *testing.T) {
	t.Parallel()
	for _, c := range successCases(t) {
		t.Run(c.name, func(t *testing.T) {
			kinds := map[string]bool{}
			for _, f := range renderCase(t, c) {
				if strings.HasPrefix(f.Path, "agents/") {
					var v map[string]any
					if err := yaml.UnmarshalStrict(f.Data, &v); err != nil {
						t.Errorf("%s: %v", f.Path, err)
					}
					if _, ok := v["token"]; ok {
						t.Errorf("%s: carries a token", f.Path)
					}
					continue
				}
				for _, doc := range crdcheck.SplitDocuments(f.Data) {
					checkObject(t, f.Path, doc)
					var tm struct{ Kind string }
					_ = yaml.Unmarshal(doc, &tm)
					kinds[tm.Kind] = true
				}
			}
			if c.name == "mixed" {
				for _, k := range []string{"Namespace", "Secret", "ConfigMap", "Cluster", "ClusterRegistrationToken", "ClusterGroup", "VerrazzanoManagedCluster", "Kustomization"} {
					if !kinds[k] {
						t.Errorf("mixed renders no %s", k)
					}
				}
			}
		})
	}
}

// TestObjectsDecodeStrictly checks the local structs, every field set, via
// the rendered mixed and oci-source cases: each field fleetgen can write
// appears in one of them and decodes strictly (above). Here we make sure
// those cases do exercise every optional field.
func TestGoldenCoversEveryField(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for _, name := range []string{"mixed", "oci-source", "agent", "bootstrap-none", "bootstrap-none-oci", "managers", "registrations", "registrations-hosted"} {
		for _, f := range renderCase(t, loadCase(t, name)) {
			all.Write(f.Data)
		}
	}
	for _, field := range []string{
		"clientID:", "kubeConfigSecret:", "ttl:", "matchLabels:", "caSecret:",
		"branch:", "tag:", "insecure: true", "secretRef:", "dependsOn:", "postBuild:",
		"substitute:", "decryption:", "images:", "newName:", "digest:", "wait: true",
		"timeout:", "prune: false", "apiServerCA:", "apiServerURL:", "repository:",
		"kustomize.toolkit.fluxcd.io/prune: disabled", "type: cluster.x-k8s.io/secret",
		"cluster.x-k8s.io/cluster-name:", "cacrt:", "server:",
		// deliveries, argocd, agent (the managers case)
		"kind: GitRepo", "kind: Policy", "bundles:", "options:", "paths:", "revision:", "targets:",
		"clusterName:", "clusterGroup:", "clusterSelector: {}", "clusterGroupSelector: {}", "helmSecretName:",
		"helmRepoURLRegex:", "clientSecretName:", "serviceAccount:", "pollingInterval:", "correctDrift:",
		"keepFailHistory:", "targetNamespace:", "allowedServiceAccounts:", "allowedClientSecretNames:",
		"allowedRepoPatterns:", "argocd.argoproj.io/secret-type: cluster", "config:", "agentTolerations:",
		"tolerationSeconds:", "agentAffinity:", "podAntiAffinity:", "nodeSelectorTerms:", "agentResources:",
		"hostNetwork: true", "agentSchedulingCustomization:", "priorityClass:", "podDisruptionBudget:",
		"fleetAgent:",
		// kubefleet, sveltos, ocm (the registrations cases)
		"kind: MemberCluster", "identity:", "apiGroup: rbac.authorization.k8s.io", "kind: SveltosCluster",
		"kubeconfigName:", "kubeconfigKeyName:", "kind: ManagedCluster", "hubAcceptsClient: true",
		"managedClusterClientConfigs:", "caBundle:", "bootstrapHubKubeConfig:", "externalServerURLs:",
	} {
		if !strings.Contains(all.String(), field) {
			t.Errorf("no golden case renders %q", field)
		}
	}
}

// Not parallel: kustomize keeps global state (its OpenAPI schema).
func TestKustomizeBuild(t *testing.T) {
	for _, c := range successCases(t) {
		t.Run(c.name, func(t *testing.T) {
			fs := filesys.MakeFsInMemory()
			dirs := map[string]bool{}
			for _, f := range renderCase(t, c) {
				if err := fs.WriteFile("/out/"+f.Path, f.Data); err != nil {
					t.Fatal(err)
				}
				if path.Base(f.Path) == "kustomization.yaml" {
					dirs[path.Dir(f.Path)] = true
				}
			}
			if !dirs["manager"] {
				t.Error("no manager/kustomization.yaml")
			}
			var sorted []string
			for d := range dirs {
				sorted = append(sorted, d)
			}
			sort.Strings(sorted)
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			for _, d := range sorted {
				m, err := k.Run(fs, "/out/"+d)
				if err != nil {
					t.Errorf("kustomize build %s: %v", d, err)
					continue
				}
				// Every file of the folder is listed: the build has as many
				// objects as the folder has documents.
				want := 0
				for _, f := range renderCase(t, c) {
					if strings.HasPrefix(f.Path, d+"/") && path.Base(f.Path) != "kustomization.yaml" {
						want += len(crdcheck.SplitDocuments(f.Data))
					}
				}
				if got := m.Size(); got != want {
					t.Errorf("kustomize build %s: %d objects, want %d", d, got, want)
				}
			}
		})
	}
}

func TestManagerEntryPoint(t *testing.T) {
	t.Parallel()
	c := loadCase(t, "mixed")
	var manager *kustomizev1.Kustomization
	for _, f := range renderCase(t, c) {
		if f.Path == "clusters/"+c.fleet.Spec.Manager.Name+"/manager.yaml" {
			manager = &kustomizev1.Kustomization{}
			if err := yaml.UnmarshalStrict(f.Data, manager); err != nil {
				t.Fatal(err)
			}
		}
	}
	if manager == nil {
		t.Fatal("no manager entry point")
	}
	if got, want := manager.Spec.Path, "./rendered/output/manager"; got != want {
		t.Errorf("manager path = %q, want %q", got, want)
	}
	if manager.Spec.Decryption == nil || manager.Spec.Decryption.Provider != "sops" {
		t.Errorf("manager decryption = %+v, want sops", manager.Spec.Decryption)
	}
}

var _ = layout.Header

// TestSyntheticFleetValidates runs the same checks over a synthetic fleet:
// many clusters of every mode, groups, two layers, image rewrites.
// Not parallel: kustomize keeps global state (its OpenAPI schema).
func TestSyntheticFleetValidates(t *testing.T) {
	f := synthetic.Fleet(40)
	files, err := generate.Render(f, synthetic.Lock(f), generate.Options{LayerImages: synthetic.LayerImages(f)})
	if err != nil {
		t.Fatal(err)
	}
	fs := filesys.MakeFsInMemory()
	for _, fl := range files {
		if err := fs.WriteFile("/out/"+fl.Path, fl.Data); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(fl.Path, "agents/") {
			continue
		}
		for _, doc := range crdcheck.SplitDocuments(fl.Data) {
			checkObject(t, fl.Path, doc)
		}
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	// clusters/<name>/ has no kustomization.yaml: TestFluxBootstrapBuild
	// builds those the way Flux does.
	for _, d := range []string{"manager"} {
		if _, err := k.Run(fs, "/out/"+d); err != nil {
			t.Errorf("kustomize build %s: %v", d, err)
		}
	}
}
