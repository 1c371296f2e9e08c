// Package publish delivers a render to where Flux reads it: a Git branch
// (go-git) or an OCI artifact in the layout `flux push artifact` makes.
//
// Both deliveries publish the same content: the render, handed over in memory
// and placed at spec.source.path, plus the top-level folder of every layer
// path, copied from the source root (the folder of fleet.yaml), so that every
// Kustomization path resolves in what Flux fetches. Nothing else is read: not
// the output folder, not the rest of the source root. Everything published is
// scanned first; a Secret with plaintext data refuses the publish.
//
// In Git, publish owns files, not folders (SPEC §6): see Git for the rules.
package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/authn"
	"sigs.k8s.io/yaml"
)

// Environment variables publishing reads. Their values are credentials (except
// the author) and never appear in logs or errors.
const (
	// EnvGitAuthor is the commit author, "Name <email>".
	EnvGitAuthor = "FLEETGEN_GIT_AUTHOR"
	// EnvGitToken is the HTTPS token (basic auth password) for Git pushes.
	EnvGitToken = "FLEETGEN_GIT_TOKEN"
	// EnvGitUsername is the HTTPS basic auth user sent with EnvGitToken;
	// default "x-access-token" (GitHub, GitLab and Gitea accept any name with a
	// token; Bitbucket wants "x-token-auth").
	EnvGitUsername = "FLEETGEN_GIT_USERNAME"
	// EnvGitSSHKey is a private key file for ssh:// pushes; without it the SSH
	// agent (SSH_AUTH_SOCK) is used, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa.
	EnvGitSSHKey = "FLEETGEN_GIT_SSH_KEY"
	// EnvGitSSHPassphrase unlocks EnvGitSSHKey.
	EnvGitSSHPassphrase = "FLEETGEN_GIT_SSH_PASSPHRASE"
)

// DefaultAuthor commits when FLEETGEN_GIT_AUTHOR is unset.
const DefaultAuthor = "fleetgen <fleetgen@localhost>"

// DefaultRetries is how many times Git redoes its commit on a moved branch.
const DefaultRetries = 5

// Result says what a publish did.
type Result struct {
	// Changed is false when the target already held this tree (no commit, no push).
	Changed bool
	// Revision is the commit hash (git) or manifest digest (oci).
	Revision string
	// Files is how many files the published tree holds.
	Files int
	// Attempts is how many times Git built and pushed a commit (1 without a race).
	Attempts int
}

type options struct {
	logger     *slog.Logger
	pushURL    string
	author     string
	retries    int
	source     string
	lookupEnv  func(string) (string, bool)
	outDir     string
	checks     []func([]layout.File) error
	now        func() time.Time
	beforePush func(attempt int) // tests: runs between building a commit and pushing it
	// sourceCommit and sourceDirty name the fleet repository's commit
	// (WithSourceCommit); dryRun gets what a push would change (WithDryRun).
	sourceCommit string
	sourceDirty  bool
	dryRun       io.Writer
	// published is what WithPublished lends Git (its fetched objects).
	published *Published
	// input are the files the model read (WithInput).
	input []string
	// templates are input files checked through what they render
	// (WithTemplates).
	templates func(string) bool
}

// Option configures Git and OCI.
type Option func(*options) error

// WithInput adds files, slash paths relative to the source root (the
// folder of fleet.yaml), to what publish copies beside the layer folders:
// every file the model of what each cluster receives read
// (layers.Model.Files: a base a kustomization takes in from outside its
// layer folder, followed Kustomizations' folders, own-repo delivery
// bundles), so that what Flux and Fleet build from the published source is
// what was validated (SPEC §6). Each is read confined to the source root, as
// the layer folders are; one in the rendered tree is never copied.
func WithInput(files []string) Option {
	return func(o *options) error { o.input = files; return nil }
}

// WithTemplates names the input files that are checked through what they
// render rather than read as YAML: the templates of a bundle's Helm chart,
// whose renders the model checks for every cluster (layers.Model
// ChartTemplate). The plaintext scan skips them; they are published.
func WithTemplates(isTemplate func(path string) bool) Option {
	return func(o *options) error { o.templates = isTemplate; return nil }
}

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) error { o.logger = l; return nil } }

// WithPushURL pushes to url instead of spec.source.url: a Git URL (https://,
// ssh://, git://, file:// or a local path) or, for OCI, oci://host/repo.
func WithPushURL(url string) Option { return func(o *options) error { o.pushURL = url; return nil } }

// WithAuthor sets the commit author, "Name <email>" (default
// FLEETGEN_GIT_AUTHOR, else DefaultAuthor).
func WithAuthor(author string) Option {
	return func(o *options) error {
		if _, _, err := parseAuthor(author); err != nil {
			return err
		}
		o.author = author
		return nil
	}
}

// WithRetries bounds how many times Git redoes its commit on top of a branch
// that moved while it pushed (default DefaultRetries; at least 1 attempt).
func WithRetries(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("retries %d: want 0 or more", n)
		}
		o.retries = n
		return nil
	}
}

// WithSource sets the OCI artifact's org.opencontainers.image.source
// annotation (default spec.source.url), e.g. the URL of the repository that
// holds fleet.yaml.
func WithSource(s string) Option { return func(o *options) error { o.source = s; return nil } }

// WithLookupEnv resolves the FLEETGEN_* variables (default os.LookupEnv):
// the Git ones and the registry's (mirror.EnvRegistryUsername, Password).
func WithLookupEnv(fn func(string) (string, bool)) Option {
	return func(o *options) error { o.lookupEnv = fn; return nil }
}

// WithOutDir names the output folder the render was written to, so that a
// layer folder that holds it does not publish it: what is pushed of the render
// comes from memory, never from that folder.
func WithOutDir(dir string) Option { return func(o *options) error { o.outDir = dir; return nil } }

// WithContentCheck runs check on everything about to be published (the
// render and the layer folders' files, sorted by path, paths relative to the
// source root) after the plaintext scan; an error refuses the publish with
// nothing pushed. Checks run in the order given.
func WithContentCheck(check func(files []layout.File) error) Option {
	return func(o *options) error {
		if check == nil {
			return errors.New("content check: nil function")
		}
		o.checks = append(o.checks, check)
		return nil
	}
}

// withBeforePush runs fn before every push attempt (tests use it to move the
// branch under a publisher).
func withBeforePush(fn func(attempt int)) Option {
	return func(o *options) error { o.beforePush = fn; return nil }
}

func newOptions(opts []Option) (*options, error) {
	o := &options{
		logger:    slog.New(slog.DiscardHandler),
		retries:   DefaultRetries,
		lookupEnv: os.LookupEnv,
		now:       time.Now,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.lookupEnv == nil {
		o.lookupEnv = os.LookupEnv
	}
	return o, nil
}

func (o *options) env(key string) string {
	v, _ := o.lookupEnv(key)
	return v
}

// keychain is mirror.Keychain for spec.registry reg, with the credentials
// of the environment.
func (o *options) keychain(reg schema.Registry) authn.Keychain {
	return mirror.Keychain(reg, o.env(mirror.EnvRegistryUsername), o.env(mirror.EnvRegistryPassword), authn.DefaultKeychain)
}

// InputDigest is the sha256 of fleet.yaml's bytes followed by the lock's
// (`cat fleet.yaml fleet.lock.yaml | sha256sum`), as "sha256:<hex>". A missing
// lock file counts as empty. For a Fleet built in Go (no File) it hashes the
// fleet's YAML encoding and the lock's canonical bytes.
func InputDigest(f *schema.Fleet, l *lock.Lock) (string, error) {
	h := sha256.New()
	if f.File != "" {
		b, err := os.ReadFile(f.File)
		if err != nil {
			return "", fmt.Errorf("input digest: %w", err)
		}
		h.Write(b)
		b, err = os.ReadFile(filepath.Join(f.Dir, lock.FileName))
		switch {
		case err == nil:
			h.Write(b)
		case errors.Is(err, os.ErrNotExist):
		default:
			return "", fmt.Errorf("input digest: %w", err)
		}
	} else {
		b, err := yaml.Marshal(f)
		if err != nil {
			return "", fmt.Errorf("input digest: %w", err)
		}
		h.Write(b)
		if l != nil {
			h.Write(l.Marshal())
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Source is the state of the Git work tree that holds fleet.yaml, as
// InspectSource finds it.
type Source struct {
	// InRepo is false when fleet.yaml's folder is in no Git work tree; the
	// other fields are then empty.
	InRepo bool
	// Commit is HEAD's hash; "" in a repository without commits.
	Commit string
	// Dirty lists, sorted and relative to the work tree's root, the files of
	// fleet.yaml, the lock, the layer folders and input (WithInput) that
	// differ from HEAD: modified, added, deleted or untracked (ignored files
	// are not listed).
	Dirty []string
}

// InspectSource finds the Git work tree that holds f's folder (walking up to
// its .git, as git does; go-git, never the git binary) and which of the
// publish's inputs (input: WithInput's files) have uncommitted changes.
// Outside any work tree it returns Source{} and no error.
func InspectSource(f *schema.Fleet, input []string) (Source, error) {
	repo, err := git.PlainOpenWithOptions(f.Dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return Source{}, nil
	}
	if err != nil {
		return Source{}, fmt.Errorf("open the Git repository of %s: %w", f.Dir, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return Source{}, nil
	}
	if err != nil {
		return Source{}, fmt.Errorf("open the Git work tree of %s: %w", f.Dir, err)
	}
	src := Source{InRepo: true}
	if head, err := repo.Head(); err == nil {
		src.Commit = head.Hash().String()
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return Source{}, fmt.Errorf("read HEAD of the Git repository of %s: %w", f.Dir, err)
	}
	root := wt.Filesystem.Root()
	base, err := relToRoot(root, f.Dir)
	if err != nil {
		return Source{}, err
	}
	join := func(p string) string {
		if base == "." {
			return p
		}
		return base + "/" + p
	}
	file := "fleet.yaml"
	if f.File != "" {
		file = filepath.Base(f.File)
	}
	files := map[string]bool{join(file): true, join(lock.FileName): true}
	var folders []string
	roots, err := layerFolders(f)
	if err != nil {
		return Source{}, err
	}
	for _, r := range roots {
		folders = append(folders, join(r.root)+"/")
	}
	for _, p := range input {
		files[join(p)] = true
	}
	st, err := wt.Status()
	if err != nil {
		return Source{}, fmt.Errorf("git status of %s: %w", root, err)
	}
	for p, s := range st {
		if s.Worktree == git.Unmodified && s.Staging == git.Unmodified {
			continue
		}
		match := files[p]
		for _, fo := range folders {
			match = match || strings.HasPrefix(p, fo)
		}
		if match {
			src.Dirty = append(src.Dirty, p)
		}
	}
	sort.Strings(src.Dirty)
	return src, nil
}

// WithSourceCommit names the fleet repository's commit in the Git commit
// message (and the OCI artifact's revision); dirty adds "(dirty)": the
// publish included uncommitted changes (--allow-dirty).
func WithSourceCommit(commit string, dirty bool) Option {
	return func(o *options) error {
		o.sourceCommit, o.sourceDirty = commit, dirty
		return nil
	}
}

// WithDryRun makes Git and OCI do everything but push, and write to w what
// the push would change: for Git one line per file the commit adds (A),
// changes (M) or removes (D), for OCI the artifact's digest and files.
func WithDryRun(w io.Writer) Option {
	return func(o *options) error {
		if w == nil {
			return errors.New("dry run: nil writer")
		}
		o.dryRun = w
		return nil
	}
}

// sourceLine is how the message names the fleet repository's commit: "" when
// unknown.
func (o *options) sourceLine() string {
	switch {
	case o.sourceCommit == "" && !o.sourceDirty:
		return ""
	case o.sourceCommit == "":
		return "fleet repository: no commit yet (dirty)"
	case o.sourceDirty:
		return "fleet repository: " + o.sourceCommit + " (dirty)"
	default:
		return "fleet repository: " + o.sourceCommit
	}
}

// trackedFilter returns, when dir (the source root) is inside a Git work
// tree, a filter that accepts a slash path relative to dir only when Git's
// index tracks it; nil outside any work tree (every file is published).
func trackedFilter(dir string) (func(rel string) bool, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the Git repository of %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the Git work tree of %s: %w", dir, err)
	}
	base, err := relToRoot(wt.Filesystem.Root(), dir)
	if err != nil {
		return nil, err
	}
	idx, err := repo.Storer.Index()
	if err != nil {
		return nil, fmt.Errorf("read the Git index of %s: %w", dir, err)
	}
	tracked := make(map[string]bool, len(idx.Entries))
	for _, e := range idx.Entries {
		p := e.Name
		if base != "." {
			var ok bool
			if p, ok = strings.CutPrefix(p, base+"/"); !ok {
				continue
			}
		}
		tracked[p] = true
	}
	return func(rel string) bool { return tracked[rel] }, nil
}

// relToRoot is dir relative to the work tree root, slash-separated ("." for
// the root), with symlinks of both resolved.
func relToRoot(root, dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	base, err := filepath.Rel(root, dir)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(base), nil
}
