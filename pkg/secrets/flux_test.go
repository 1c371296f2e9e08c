package secrets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// This file replays what Flux's kustomize-controller does with the manager
// Kustomization (decryption.provider: sops, secretRef: sops-age), following
// internal/decryptor/decryptor.go and internal/sops/keyservice: build the
// folder with kustomize, find resources that carry SOPS metadata, marshal each
// to JSON, decrypt it with the JSON store and a local key service that holds
// the age identities of the sops-age Secret (its *.agekey entries), without
// the MAC check (kustomize-controller skips it by default), and unmarshal the
// result back into the resource.

// fluxKeyServer is kustomize-controller's key service for age: it applies the
// imported identities to the master key instead of reading the environment.
type fluxKeyServer struct {
	identities sopsage.ParsedIdentities
}

func (s fluxKeyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encrypt is not used by the decryptor")
}

func (s fluxKeyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	k, ok := req.Key.KeyType.(*keyservice.Key_AgeKey)
	if !ok {
		return nil, fmt.Errorf("key type %T not configured", req.Key.KeyType)
	}
	mk := sopsage.MasterKey{Recipient: k.AgeKey.Recipient, EncryptedKey: string(req.Ciphertext)}
	s.identities.ApplyToMasterKey(&mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

// fluxDecryptor imports the data of the sops-age Secret as kustomize-controller
// does: every key ending in .agekey is a set of age identities.
func fluxDecryptor(t testing.TB, sopsAgeSecret map[string]string) []keyservice.KeyServiceClient {
	t.Helper()
	var ids sopsage.ParsedIdentities
	for name, value := range sopsAgeSecret {
		if path.Ext(name) == ".agekey" {
			if err := ids.Import(value); err != nil {
				t.Fatalf("import %s: %v", name, err)
			}
		}
	}
	return []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(fluxKeyServer{identities: ids})}
}

// isSOPSEncryptedResource is kustomize-controller's check: a sops field with
// a mac.
func isSOPSEncryptedResource(res *resource.Resource) bool {
	f := res.Field("sops")
	if f.IsNilOrEmpty() {
		return false
	}
	return !f.Value.Field("mac").IsNilOrEmpty()
}

// sopsDecryptWithFormat is Decryptor.SopsDecryptWithFormat without the
// optional MAC check.
func sopsDecryptWithFormat(svcs []keyservice.KeyServiceClient, data []byte, in, out formats.Format) ([]byte, error) {
	store := common.StoreForFormat(in, config.NewStoresConfig())
	tree, err := store.LoadEncryptedFile(data)
	if err != nil {
		return nil, fmt.Errorf("load encrypted data: %w", err)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices(svcs, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, fmt.Errorf("cannot get sops data key: %w", err)
	}
	if _, err := tree.Decrypt(key, aes.NewCipher()); err != nil {
		return nil, fmt.Errorf("error decrypting sops tree: %w", err)
	}
	return common.StoreForFormat(out, config.NewStoresConfig()).EmitPlainFile(tree.Branches)
}

// fluxApply builds dir/kustomization.yaml (listing files) from an in-memory
// file system holding files, decrypts every SOPS-encrypted resource as
// kustomize-controller does, and returns the resources by name.
func fluxApply(t testing.TB, files []layout.File, sopsAgeSecret map[string]string) (map[string]*resource.Resource, error) {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, f := range files {
		if err := fs.WriteFile(path.Join("/src", f.Path), f.Data); err != nil {
			t.Fatal(err)
		}
		if path.Ext(f.Path) == ".yaml" && f.Path != ConfigPath {
			kust += "- " + f.Path + "\n"
		}
	}
	if err := fs.WriteFile("/src/kustomization.yaml", []byte(kust)); err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/src")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	svcs := fluxDecryptor(t, sopsAgeSecret)
	out := map[string]*resource.Resource{}
	for _, res := range rm.Resources() {
		if isSOPSEncryptedResource(res) {
			js, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			plain, err := sopsDecryptWithFormat(svcs, js, formats.Json, formats.Json)
			if err != nil {
				return nil, fmt.Errorf("decrypt %s/%s: %w", res.GetNamespace(), res.GetName(), err)
			}
			if err := res.UnmarshalJSON(plain); err != nil {
				t.Fatal(err)
			}
		}
		out[res.GetName()] = res
	}
	return out, nil
}
