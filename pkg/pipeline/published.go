package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// keepPublished returns r's files with each sealed Secret replaced by the
// ciphertext already published at its path (spec.source: the target branch,
// or the OCI artifact at the tag) when that ciphertext still seals the same
// plaintext for the same recipients, under secrets.Seal's rules (the
// plaintext-hash annotation; with an age key, decryption too). SOPS output is
// random and CI starts from a fresh clone with no output folder: without this,
// every merge job would publish new ciphertext for unchanged Secrets, a commit
// on every run. The published tree is untrusted like the output folder
// (publish.Published reads it bounded, never through a symlink). It also
// returns the Published, for publish.WithPublished, and how many Secrets it
// took from it.
func keepPublished(ctx context.Context, cfg Config, r *rendered, opts []publish.Option) ([]layout.File, *publish.Published, int, error) {
	f := r.fleet
	if f.Spec.Encryption == nil || f.Spec.Encryption.SOPS == nil {
		return r.files, nil, 0, nil
	}
	sealed := map[string]int{} // path → index in r.files
	var paths []string
	for i, file := range r.files {
		if file.Secret {
			sealed[file.Path] = i
			paths = append(paths, file.Path)
		}
	}
	if len(paths) == 0 {
		return r.files, nil, 0, nil
	}
	pub, err := publish.FetchPublished(ctx, f, paths, opts...)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("publish: nothing pushed: %w", err)
	}
	// Only the Secrets whose published bytes differ from the render's need a
	// second look; the plaintext of each is in r.plain.
	var todo []layout.File
	for _, file := range r.plain {
		i, ok := sealed[file.Path]
		if !ok {
			continue
		}
		if b, ok := pub.File(file.Path); ok && !bytes.Equal(b, r.files[i].Data) {
			todo = append(todo, file)
		}
	}
	if len(todo) == 0 {
		return r.files, pub, 0, nil
	}
	ids, err := cfg.ageIdentities()
	if err != nil {
		return nil, nil, 0, err
	}
	var forged []string
	again, err := secrets.Seal(todo, f.Spec.Encryption.SOPS, pub.File,
		secrets.WithDecryptCheck(ids, func(p string) { forged = append(forged, p) }))
	if err != nil {
		return nil, nil, 0, err
	}
	if len(forged) > 0 {
		cfg.logger().Warn("not keeping published sealed Secrets whose ciphertext does not decrypt to the render", "files", truncateList(forged, maxReported))
	}
	files := slices.Clone(r.files)
	kept := 0
	for _, file := range again {
		i, ok := sealed[file.Path]
		if b, _ := pub.File(file.Path); ok && bytes.Equal(file.Data, b) {
			files[i].Data = b
			kept++
		}
	}
	return files, pub, kept, nil
}
