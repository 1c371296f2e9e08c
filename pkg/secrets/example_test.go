package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestExampleFleetStandalone renders examples/fleet-standalone with
// encryption on, seals it, and decrypts every kubeconfig Secret with the
// example's test age key the way kustomize-controller does. It skips while
// the example or the kubeconfig Secret rendering is not there yet.
func TestExampleFleetStandalone(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "fleet-standalone")
	f, err := schema.Load(filepath.Join(dir, "fleet.yaml"), schema.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("examples/fleet-standalone/fleet.yaml not there yet")
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(dir, "fleet.lock.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		l, err = lock.New(), nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var auto []string
	want := map[string][]byte{} // Secret name -> kubeconfig
	for _, c := range f.Spec.Clusters {
		switch c.Registration.Mode {
		case "agent":
			if c.Registration.ClientID == "" || c.Registration.ClientID == "auto" {
				auto = append(auto, c.Name)
			}
		case "manager":
			want[c.Name+"-kubeconfig"] = c.Registration.Kubeconfig.Data
		}
	}
	if _, err := l.AssignClientIDs(auto, nil); err != nil {
		t.Fatal(err)
	}
	files, err := generate.Render(f, l, generate.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(files, func(f layout.File) bool { return f.Secret }) {
		t.Skip("generate.Render does not render kubeconfig Secrets yet")
	}
	if f.Spec.Encryption == nil || f.Spec.Encryption.SOPS == nil {
		t.Fatal("examples/fleet-standalone has no spec.encryption.sops")
	}

	key, err := os.ReadFile(filepath.Join(dir, "age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	_, pub, _ := strings.Cut(string(key), "# public key: ")
	pub, _, _ = strings.Cut(pub, "\n")
	if !slices.Contains(f.Spec.Encryption.SOPS.AgeRecipients, pub) {
		t.Fatalf("examples/fleet-standalone/fleet.yaml: spec.encryption.sops.ageRecipients must list %s, the public key of its age.agekey", pub)
	}

	sealed := mustSeal(t, files, f.Spec.Encryption.SOPS, nil)
	if err := Scan(sealed, false); err != nil {
		t.Fatal(err)
	}
	var secrets []layout.File
	for _, f := range sealed {
		if f.Secret {
			secrets = append(secrets, f)
		}
	}
	res, err := fluxApply(t, secrets, map[string]string{"age.agekey": string(key)})
	if err != nil {
		t.Fatal(err)
	}
	for name, kc := range want {
		r := res[name]
		if r == nil {
			t.Errorf("no Secret %s rendered", name)
			continue
		}
		got, err := base64.StdEncoding.DecodeString(r.GetDataMap()["value"])
		if err != nil || !bytes.Equal(got, kc) {
			t.Errorf("Secret %s does not decrypt to its kubeconfig", name)
		}
	}
	again := mustSeal(t, files, f.Spec.Encryption.SOPS, previousOf(sealed))
	if d := diffPaths(sealed, again); len(d) != 0 {
		t.Errorf("re-render changed %v", d)
	}
}
