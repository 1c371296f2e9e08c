// Package argocdoracle holds fleetgen's Argo CD cluster Secrets and its
// ApplicationSet preview (`fleetgen targets`) equal to Argo CD's own code.
// It renders examples/multi-manager with one more layer on the cluster that
// runs Argo CD, holding every case of pkg/appset/testdata/cases and the
// cluster Secrets of pkg/appset/testdata/clusters.yaml; decodes every
// cluster Secret fleetgen emits with Argo CD's util/db; and generates every
// case with Argo CD's applicationset/controllers/template
// .GenerateApplications and its cluster and list generators over all those
// Secrets, which must make exactly the Applications fleetgen previews.
//
// It is a module of its own that does not import fleetgen: Argo CD links
// its whole controller tree with its own Kubernetes libraries. It runs the
// fleetgen binary that run.sh builds (FLEETGEN_BIN); `make oracle-argocd`
// runs it.
package argocdoracle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/db"
	"github.com/google/go-cmp/cmp"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

const argoNamespace = "argocd"

func init() { log.SetOutput(io.Discard) }

// root is the fleetgen repository.
var root = filepath.Join("..", "..")

// fleetgen runs the fleetgen binary FLEETGEN_BIN with args; exit code 2
// (invalid input, which targets explains anyway) is accepted when invalid.
func fleetgen(t *testing.T, args ...string) []byte {
	t.Helper()
	return run(t, false, args...)
}

func run(t *testing.T, invalid bool, args ...string) []byte {
	t.Helper()
	bin := os.Getenv("FLEETGEN_BIN")
	if bin == "" {
		t.Skip("FLEETGEN_BIN is not set: run test/argocdoracle/run.sh")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !(invalid && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2) {
		t.Fatalf("fleetgen %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// fixture is examples/multi-manager rendered with the cases' layer, and
// what `fleetgen targets` says of it.
type fixture struct {
	cases    []string // the case files, as the layer holds them
	rendered []corev1.Secret
	layer    []corev1.Secret
	targets  targetsJSON
}

// targetsJSON is the part of `fleetgen targets --output json` the oracle reads.
type targetsJSON struct {
	ApplicationSets []struct {
		Namespace    string        `json:"namespace"`
		Name         string        `json:"name"`
		Cluster      string        `json:"cluster"`
		Applications []application `json:"applications"`
		NotEvaluated []string      `json:"notEvaluated"`
		Errors       []string      `json:"errors"`
	} `json:"applicationSets"`
}

// application is what fleetgen previews of an Application.
type application struct {
	Name                 string `json:"name"`
	Namespace            string `json:"namespace,omitempty"`
	Project              string `json:"project"`
	Server               string `json:"server,omitempty"`
	DestinationName      string `json:"destinationName,omitempty"`
	DestinationNamespace string `json:"destinationNamespace,omitempty"`
	Generator            int    `json:"generator"`
}

// argoHostLabel selects, in examples/multi-manager, the cluster that runs
// Argo CD: the cases' layer goes there.
const argoHostLabel = "role: gitops"

func setup(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("cp", "-r", filepath.Join(root, "examples", "multi-manager")+"/.", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("copy the example: %v\n%s", err, out)
	}
	cases, err := filepath.Glob(filepath.Join(root, "pkg", "appset", "testdata", "cases", "*.yaml"))
	if err != nil || len(cases) < 20 {
		t.Fatalf("%d cases, want at least 20 (%v)", len(cases), err)
	}
	// fleetgen's own cluster Secrets, as render writes them.
	out := filepath.Join(t.TempDir(), "out")
	fleetYAML := filepath.Join(dir, "fleet.yaml")
	fleetgen(t, "render", "-f", fleetYAML, "-o", out)

	// Then the cases' layer on the Argo CD cluster, for targets (render
	// would refuse its cluster Secrets: they carry annotations and a
	// project, which a layer may not publish in plaintext).
	layer := filepath.Join(dir, "appset-cases")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- clusters.yaml\n"
	fx := &fixture{}
	for _, c := range append([]string{filepath.Join(root, "pkg", "appset", "testdata", "clusters.yaml")}, cases...) {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(layer, filepath.Base(c)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(c) != "clusters.yaml" {
			kust += "- " + filepath.Base(c) + "\n"
			fx.cases = append(fx.cases, filepath.Join(layer, filepath.Base(c)))
		} else {
			fx.layer = readSecrets(t, string(b))
		}
	}
	if err := os.WriteFile(filepath.Join(layer, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fleetYAML)
	if err != nil {
		t.Fatal(err)
	}
	const layers = "  layers:\n"
	if !bytes.Contains(b, []byte(layers)) || !bytes.Contains(b, []byte(argoHostLabel)) {
		t.Fatalf("examples/multi-manager has no spec.layers or no cluster labelled %s", argoHostLabel)
	}
	b = bytes.Replace(b, []byte(layers), []byte(layers+"    - name: appset-cases\n      path: ./appset-cases\n      selector: {"+argoHostLabel+"}\n"), 1)
	if err := os.WriteFile(fleetYAML, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// validate refuses the layer's Secrets in plaintext: targets explains
	// the fleet and exits 2.
	if err := json.Unmarshal(run(t, true, "targets", "-f", fleetYAML, "--output", "json"), &fx.targets); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) != "argocd" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fx.rendered = append(fx.rendered, readSecrets(t, string(data))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fx.rendered) == 0 {
		t.Fatal("examples/multi-manager renders no Argo CD cluster Secret")
	}
	return fx
}

// readSecrets decodes a YAML stream of Secrets strictly.
func readSecrets(t *testing.T, data string) []corev1.Secret {
	t.Helper()
	var out []corev1.Secret
	for _, doc := range strings.Split(data, "\n---\n") {
		var s corev1.Secret
		if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestClusterSecretsDecode: every Argo CD cluster Secret fleetgen emits
// decodes with Argo CD's db.SecretToCluster into the cluster meant: a name,
// an https server, the labels of the Secret, argocd-k8s-auth azure with
// workload identity, and no credential.
func TestClusterSecretsDecode(t *testing.T) {
	fx := setup(t)
	for i := range fx.rendered {
		s := &fx.rendered[i]
		c, err := db.SecretToCluster(s)
		if err != nil {
			t.Errorf("%s: Argo CD cannot read it: %v", s.Name, err)
			continue
		}
		if c.Name == "" || "cluster-"+c.Name != s.Name || !strings.HasPrefix(c.Server, "https://") {
			t.Errorf("%s: name %q, server %q", s.Name, c.Name, c.Server)
		}
		e := c.Config.ExecProviderConfig
		if e == nil || e.Command != "argocd-k8s-auth" || strings.Join(e.Args, " ") != "azure" || e.Env["AAD_LOGIN_METHOD"] != "workloadidentity" || e.Env["AZURE_CLIENT_ID"] == "" {
			t.Errorf("%s: exec provider %+v, want argocd-k8s-auth azure with workload identity", s.Name, e)
		}
		if c.Config.BearerToken != "" || c.Config.Password != "" || len(c.Config.KeyData) > 0 || c.Config.AWSAuthConfig != nil {
			t.Errorf("%s: holds a credential", s.Name)
		}
		if len(c.Labels) == 0 {
			t.Errorf("%s: Argo CD sees no label: the cluster generator cannot select it", s.Name)
		}
		for k, v := range c.Labels {
			if s.Labels[k] != v {
				t.Errorf("%s: Argo CD's label %s=%s is not the Secret's", s.Name, k, v)
			}
		}
	}
}

// TestGeneratorsEqual: for every case, each generator fleetgen evaluates
// makes, with Argo CD's own code over every cluster Secret of the fixture
// (fleetgen's and the layer's), exactly the Applications `fleetgen
// targets` previews (name, namespace, project, destination), and fails
// exactly when fleetgen says Argo CD would.
func TestGeneratorsEqual(t *testing.T) {
	fx := setup(t)
	secrets := append(append([]corev1.Secret(nil), fx.rendered...), fx.layer...)
	objs := make([]client.Object, len(secrets))
	robjs := make([]runtime.Object, len(secrets))
	for i := range secrets {
		s := secrets[i]
		s.Namespace = argoNamespace
		objs[i], robjs[i] = &s, &s
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	gens := map[string]generators.Generator{
		"Clusters": generators.NewClusterGenerator(context.Background(), c, kubefake.NewSimpleClientset(robjs...), argoNamespace),
		"List":     generators.NewListGenerator(),
	}
	compared := 0
	for _, f := range fx.cases {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var as argov1alpha1.ApplicationSet
		if err := yaml.Unmarshal(data, &as); err != nil {
			t.Fatal(err)
		}
		t.Run(as.Name, func(t *testing.T) {
			found := false
			for _, p := range fx.targets.ApplicationSets {
				if p.Namespace != as.Namespace || p.Name != as.Name {
					continue
				}
				found = true
				skip, failed := generatorsOf(p.NotEvaluated), generatorsOf(p.Errors)
				for gi := range as.Spec.Generators {
					if skip[gi] {
						continue
					}
					one := as.DeepCopy()
					one.Spec.Generators = one.Spec.Generators[gi : gi+1]
					apps, _, err := template.GenerateApplications(log.NewEntry(log.StandardLogger()), *one, gens, &utils.Render{}, c)
					var got, want []application
					for _, a := range apps {
						got = append(got, application{
							Name: a.Name, Namespace: a.Namespace, Project: a.Spec.Project,
							Server: a.Spec.Destination.Server, DestinationName: a.Spec.Destination.Name,
							DestinationNamespace: a.Spec.Destination.Namespace, Generator: gi,
						})
					}
					for _, a := range p.Applications {
						if a.Generator == gi {
							want = append(want, a)
						}
					}
					sortApps(got)
					sortApps(want)
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("spec.generators[%d]: Applications (-fleetgen +Argo CD):\n%s", gi, d)
					}
					if (err != nil) != failed[gi] {
						t.Errorf("spec.generators[%d]: Argo CD's error %v, fleetgen's errors %q", gi, err, p.Errors)
					}
					compared++
				}
			}
			if !found {
				t.Errorf("fleetgen targets previews no ApplicationSet %s/%s", as.Namespace, as.Name)
			}
		})
	}
	if compared < 20 {
		t.Errorf("compared %d generators, want every evaluated generator of at least 20 cases", compared)
	}
	t.Logf("compared %d generators of %d cases over %d cluster Secrets (%d fleetgen's)", compared, len(fx.cases), len(secrets), len(fx.rendered))
}

var generatorIndex = regexp.MustCompile(`^spec\.generators\[(\d+)\]`)

// generatorsOf returns the generators that the messages name.
func generatorsOf(msgs []string) map[int]bool {
	out := map[int]bool{}
	for _, m := range msgs {
		if s := generatorIndex.FindStringSubmatch(m); s != nil {
			i, _ := strconv.Atoi(s[1])
			out[i] = true
		}
	}
	return out
}

func sortApps(a []application) {
	sort.SliceStable(a, func(i, j int) bool {
		return fmt.Sprint(a[i].Name, "\x00", a[i].Server, "\x00", a[i].DestinationName) < fmt.Sprint(a[j].Name, "\x00", a[j].Server, "\x00", a[j].DestinationName)
	})
}
