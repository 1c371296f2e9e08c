// Package secrets seals credential Secrets with SOPS for age recipients, in the
// format Flux's kustomize-controller decrypts, and scans rendered output for
// anything left in plaintext.
//
// Sealing is randomised (a fresh SOPS data key and age stanza per file), so to
// keep a re-render free of Git churn each sealed Secret carries the annotation
// HashAnnotation: a salted argon2id hash of its plaintext and recipients. When
// the previous render's hash still matches, Seal keeps the previous ciphertext
// byte for byte. Anyone can copy that annotation onto other ciphertext, so with
// WithDecryptCheck and an age identity Seal decrypts the previous file before
// it trusts it. docs/secrets.md explains the choice and its threat model.
//
// The SOPS format is written here with filippo.io/age, not with SOPS's own
// packages, which link every cloud key service SOPS supports (sopstree.go).
package secrets

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// EncryptedRegex is the SOPS encrypted_regex fleetgen writes: only the values
// under data and stringData are encrypted, so names, labels and annotations
// stay readable in Git and reviewable in a diff.
const EncryptedRegex = "^(data|stringData)$"

// ConfigPath is the SOPS creation rules file Seal adds to the output, so that
// `sops` run in the output folder edits sealed files with the same settings.
const ConfigPath = string(layout.SOPSConfig)

// Seal returns files with every File.Secret encrypted for enc's age recipients
// (encrypted_regex ^(data|stringData)$), plus the .sops.yaml creation rules
// file (whenever enc has recipients). previous returns the bytes a path holds
// on disk now (nil, false when none); Seal calls it once per File.Secret, from
// one goroutine. When that file still seals the same plaintext for the same
// recipients (HashAnnotation), it is kept byte for byte so that a re-render
// makes no Git diff. With enc nil (or without recipients), files are returned
// as they are, for Scan to judge. The result is sorted by Path; sealed files
// keep File.Secret and layout.Header as their first line. Encryption runs
// on every CPU. Seal never logs, and its errors never contain secret content;
// a recipient that does not parse is an input error.
//
// With WithDecryptCheck, a previous file is kept only when it decrypts to the
// Secret being sealed.
func Seal(files []layout.File, enc *schema.SOPS, previous func(path string) ([]byte, bool), opts ...Option) ([]layout.File, error) {
	s := sealer{rand: rand.Reader, now: lastModified, workers: runtime.GOMAXPROCS(0)}
	for _, o := range opts {
		o(&s.opts)
	}
	return s.seal(files, enc, previous)
}

// lastModified is what every sealed file's sops.lastmodified says. SOPS needs
// the field (it is the MAC's additional data) but nothing reads it as a date;
// a fixed value keeps the wall clock out of the output, whose history is Git's.
func lastModified() time.Time { return time.Unix(0, 0) }

// sealer holds what tests replace: the source of salts and the clock that
// stamps sops.lastmodified.
type sealer struct {
	rand    io.Reader
	now     func() time.Time
	workers int
	opts    sealOptions
}

func (s sealer) seal(files []layout.File, enc *schema.SOPS, previous func(path string) ([]byte, bool)) ([]layout.File, error) {
	if enc == nil || len(enc.AgeRecipients) == 0 {
		return files, nil
	}
	recipients, err := normalizeRecipients(enc.AgeRecipients)
	if err != nil {
		return nil, err
	}
	if s.opts.ids != nil {
		if err := s.opts.ids.check(recipients); err != nil {
			return nil, problem.Invalid(err)
		}
	}
	if previous == nil {
		previous = func(string) ([]byte, bool) { return nil, false }
	}

	out := make([]layout.File, 0, len(files)+1)
	var jobs []int
	for _, f := range files {
		if f.Path == ConfigPath {
			return nil, fmt.Errorf("seal: %s is already in the output", ConfigPath)
		}
		if f.Secret {
			jobs = append(jobs, len(out))
		}
		out = append(out, f)
	}
	// Salts are drawn and previous files read in file order, before the work
	// fans out: a deterministic reader gives deterministic salts, and
	// previous need not be safe for concurrent use.
	salts := make([][]byte, len(jobs))
	prevs := make([][]byte, len(jobs))
	for j, i := range jobs {
		salts[j] = make([]byte, saltLen)
		if _, err := io.ReadFull(s.rand, salts[j]); err != nil {
			return nil, fmt.Errorf("seal: read random salt: %w", err)
		}
		if prev, ok := previous(out[i].Path); ok {
			prevs[j] = prev
		}
	}

	errs := make([]error, len(jobs))
	forged := make([]bool, len(jobs))
	var g errgroup.Group
	g.SetLimit(max(1, s.workers))
	for j, i := range jobs {
		g.Go(func() error {
			data, bad, err := s.sealFile(out[i], recipients, prevs[j], salts[j])
			forged[j] = bad
			if err != nil {
				errs[j] = err // all failures are reported, in file order
				return nil
			}
			out[i].Data = data
			out[i].Secret = true
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.opts.forged != nil {
		for j, i := range jobs {
			if forged[j] {
				s.opts.forged(out[i].Path)
			}
		}
	}

	sealed := make([]string, len(jobs))
	for j, i := range jobs {
		sealed[j] = out[i].Path
	}
	cfg, err := creationRules(recipients, sealed)
	if err != nil {
		return nil, err
	}
	out = append(out, layout.File{Path: ConfigPath, Data: cfg})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// sealFile returns prev when it still seals f's plaintext for recipients,
// and a fresh encryption otherwise. With identities, prev must also decrypt
// to that plaintext; forged reports a prev whose annotation said it did
// while its ciphertext did not.
func (s sealer) sealFile(f layout.File, recipients []string, prev, salt []byte) (data []byte, forged bool, err error) {
	if prev != nil && unchanged(prev, f.Data, recipients) {
		if s.opts.ids == nil || decryptsTo(prev, f.Data, s.opts.ids) {
			return prev, false, nil
		}
		forged = true
	}
	data, err = encrypt(f.Data, recipients, hashPlaintext(f.Data, recipients, salt), s.now())
	if err != nil {
		return nil, false, fmt.Errorf("seal %s: %w", f.Path, err)
	}
	return data, forged, nil
}

// normalizeRecipients trims, sorts and de-duplicates the recipients, so that
// their order in fleet.yaml does not matter, and checks each one parses.
// A recipient is public: naming its index is enough, though printing it would
// be harmless.
func normalizeRecipients(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for i, r := range in {
		r = strings.TrimSpace(r)
		if err := checkRecipient(r); err != nil {
			return nil, problem.Invalid(fmt.Errorf("spec.encryption.sops.ageRecipients[%d]: %w", i, err))
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
