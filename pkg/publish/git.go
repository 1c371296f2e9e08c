package publish

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Git commits the rendered tree in outDir at spec.source.path, plus every layer
// folder of the source root at its own path, to spec.source's branch and pushes
// without force, retrying on a moved head a bounded number of times.
//
// It fetches the branch spec.source.ref from spec.source.url (or WithPushURL:
// https://, http://, ssh://, git://, file:// or a local path); an empty
// repository or a missing branch starts the branch. Only the subtrees the tree
// owns are replaced (the folder at spec.source.path, or with path "" the
// rendered top-level entries manager/, clusters/, agents/ and .sops.yaml, and
// each layer's top-level folder); every other file of the branch is kept. An
// unchanged tree makes no commit (Result.Changed false). The commit message
// names the fleet and InputDigest; the author is WithAuthor, else
// FLEETGEN_GIT_AUTHOR, else DefaultAuthor. When the branch moved under the
// push, Git fetches it and redoes its commit on the new head, up to
// WithRetries more times, then fails.
//
// HTTPS uses FLEETGEN_GIT_TOKEN as basic auth password; SSH uses
// FLEETGEN_GIT_SSH_KEY, else the SSH agent, else the default keys, and checks
// host keys against known_hosts (SSH_KNOWN_HOSTS or ~/.ssh/known_hosts). The
// work happens in memory; nothing is written to disk. Local paths and file://
// use go-git's file transport, which runs git-upload-pack/git-receive-pack.
func Git(ctx context.Context, f *schema.Fleet, l *lock.Lock, outDir string, opts ...Option) (Result, error) {
	o, err := newOptions(opts)
	if err != nil {
		return Result{}, err
	}
	target := o.pushURL
	if target == "" {
		target = f.Spec.Source.URL
	}
	if target == "" {
		return Result{}, schema.Invalid(errors.New("publish: spec.source.url is empty and no push URL was given"))
	}
	target, err = normalizeGitURL(target)
	if err != nil {
		return Result{}, schema.Invalid(fmt.Errorf("publish: push URL %s: %w", redact(target), err))
	}
	shown := redact(target)
	branch := f.Spec.Source.Ref
	if branch == "" {
		branch = "main"
	}
	if err := validBranch(branch); err != nil {
		return Result{}, schema.Invalid(fmt.Errorf("publish: spec.source.ref %q: %w", branch, err))
	}
	author := o.author
	if author == "" {
		author = o.env(EnvGitAuthor)
	}
	if author == "" {
		author = DefaultAuthor
	}
	authorName, authorEmail, err := parseAuthor(author)
	if err != nil {
		return Result{}, schema.Invalid(fmt.Errorf("publish: %s: %w", EnvGitAuthor, err))
	}
	digest, err := InputDigest(f, l)
	if err != nil {
		return Result{}, err
	}
	c, err := collect(f, outDir, o.logger)
	if err != nil {
		return Result{}, err
	}
	auth, err := gitAuth(target, o)
	if err != nil {
		return Result{}, fmt.Errorf("publish to %s: %w", shown, err)
	}

	st := memory.NewStorage()
	repo, err := git.Init(st, nil)
	if err != nil {
		return Result{}, err
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{target}})
	if err != nil {
		return Result{}, err
	}
	// Blobs do not change between attempts: write them once.
	blobs, err := writeBlobs(st, c)
	if err != nil {
		return Result{}, err
	}
	localRef := plumbing.NewBranchReferenceName(branch)
	remoteRef := plumbing.NewRemoteReferenceName("origin", branch)
	msg := fmt.Sprintf("fleetgen: publish %s (input %s)\n", f.Metadata.Name, digest)

	attempts := o.retries + 1
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			// Exponential backoff with jitter, so racing publishers spread out.
			wait := time.Duration(50<<min(attempt-2, 5)) * time.Millisecond
			wait += rand.N(wait)
			o.logger.Info("branch moved while pushing; retrying on the new head", "url", shown, "branch", branch, "attempt", attempt, "wait", wait)
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(wait):
			}
		}
		start := time.Now()
		head, err := fetchBranch(ctx, remote, st, branch, auth)
		if err != nil {
			return Result{}, fmt.Errorf("publish to %s: fetch %s: %w", shown, branch, err)
		}
		o.logger.Debug("fetched", "url", shown, "branch", branch, "head", head.String(), "elapsed", time.Since(start))

		var baseTree plumbing.Hash
		if !head.IsZero() {
			hc, err := object.GetCommit(st, head)
			if err != nil {
				return Result{}, fmt.Errorf("publish to %s: read %s: %w", shown, head, err)
			}
			baseTree = hc.TreeHash
		}
		start = time.Now()
		treeHash, err := buildTree(st, baseTree, c, blobs)
		if err != nil {
			return Result{}, fmt.Errorf("publish to %s: build tree: %w", shown, err)
		}
		if treeHash == baseTree {
			o.logger.Info("branch already holds this tree; nothing to commit", "url", shown, "branch", branch, "commit", head.String())
			return Result{Changed: false, Revision: head.String(), Files: len(c.files), Attempts: attempt}, nil
		}
		now := o.now()
		sig := object.Signature{Name: authorName, Email: authorEmail, When: now}
		commit := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash}
		if !head.IsZero() {
			commit.ParentHashes = []plumbing.Hash{head}
		}
		obj := st.NewEncodedObject()
		if err := commit.Encode(obj); err != nil {
			return Result{}, err
		}
		commitHash, err := st.SetEncodedObject(obj)
		if err != nil {
			return Result{}, err
		}
		o.logger.Debug("committed", "commit", commitHash.String(), "files", len(c.files), "elapsed", time.Since(start))
		if err := st.SetReference(plumbing.NewHashReference(localRef, commitHash)); err != nil {
			return Result{}, err
		}
		if o.beforePush != nil {
			o.beforePush(attempt)
		}
		start = time.Now()
		push := &git.PushOptions{
			RemoteName: "origin",
			RefSpecs:   []config.RefSpec{config.RefSpec(localRef + ":" + localRef)}, // no "+": never force
			Auth:       auth,
		}
		if !head.IsZero() {
			// The remote must still be where we built on.
			push.RequireRemoteRefs = []config.RefSpec{config.RefSpec(head.String() + ":" + localRef.String())}
		}
		err = remote.PushContext(ctx, push)
		if err == nil {
			_ = st.SetReference(plumbing.NewHashReference(remoteRef, commitHash))
			o.logger.Info("pushed", "url", shown, "branch", branch, "commit", commitHash.String(), "files", len(c.files), "attempt", attempt, "elapsed", time.Since(start))
			return Result{Changed: true, Revision: commitHash.String(), Files: len(c.files), Attempts: attempt}, nil
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		// Did the branch move (a race), or is this a real failure?
		now2, ferr := fetchBranch(ctx, remote, st, branch, auth)
		if ferr != nil || now2 == head {
			return Result{}, fmt.Errorf("publish to %s: push %s: %w", shown, branch, err)
		}
		lastErr = err
	}
	return Result{}, fmt.Errorf("publish to %s: branch %s kept moving; gave up after %d attempts (never force-pushing): %w", shown, branch, attempts, lastErr)
}

// fetchBranch fetches branch into refs/remotes/origin/<branch> and returns its
// head, or the zero hash when the remote is empty or lacks the branch.
func fetchBranch(ctx context.Context, remote *git.Remote, refs storer.ReferenceStorer, branch string, auth transport.AuthMethod) (plumbing.Hash, error) {
	rr := plumbing.NewRemoteReferenceName("origin", branch)
	spec := config.RefSpec("+" + plumbing.NewBranchReferenceName(branch).String() + ":" + rr.String())
	err := remote.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: auth, Tags: git.NoTags})
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.As(err, &noMatch):
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, err
	}
	// The fetch leaves the remote-tracking ref at the remote's head (even when
	// "already up to date").
	r, err := refs.Reference(rr)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.Hash(), nil
}

// writeBlobs stores every file's blob and returns the hashes by path.
func writeBlobs(st storer.EncodedObjectStorer, c *content) (map[string]plumbing.Hash, error) {
	out := make(map[string]plumbing.Hash, len(c.files))
	for p, fl := range c.files {
		obj := st.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		obj.SetSize(int64(len(fl.data)))
		w, err := obj.Writer()
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(fl.data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		h, err := st.SetEncodedObject(obj)
		if err != nil {
			return nil, err
		}
		out[p] = h
	}
	return out, nil
}

// dirNode is a folder being edited. A child with a nil dir and a tree mode is
// an untouched subtree kept by hash.
type dirNode struct {
	entries map[string]*dirEntry
}

type dirEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
	dir  *dirNode // loaded (edited) subtree, or nil
}

// buildTree returns the hash of base with every root of c replaced by c's
// files, writing new tree objects to st. Subtrees it does not touch keep their
// hash (and are not read).
func buildTree(st storer.EncodedObjectStorer, base plumbing.Hash, c *content, blobs map[string]plumbing.Hash) (plumbing.Hash, error) {
	root, err := loadDir(st, base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, r := range c.roots {
		if err := root.remove(st, strings.Split(r, "/")); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	for _, p := range c.paths() {
		mode := filemode.Regular
		if c.files[p].exec {
			mode = filemode.Executable
		}
		if err := root.put(st, strings.Split(p, "/"), mode, blobs[p]); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s: %w", p, err)
		}
	}
	h, _, err := root.write(st)
	return h, err
}

func loadDir(st storer.EncodedObjectStorer, h plumbing.Hash) (*dirNode, error) {
	n := &dirNode{entries: map[string]*dirEntry{}}
	if h.IsZero() {
		return n, nil
	}
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		n.entries[e.Name] = &dirEntry{mode: e.Mode, hash: e.Hash}
	}
	return n, nil
}

// child returns the loaded subfolder name, creating it (or replacing a file of
// that name) when create is set; nil when absent and not created.
func (n *dirNode) child(st storer.EncodedObjectStorer, name string, create bool) (*dirNode, error) {
	e, ok := n.entries[name]
	if ok && e.mode == filemode.Dir {
		if e.dir == nil {
			d, err := loadDir(st, e.hash)
			if err != nil {
				return nil, err
			}
			e.dir = d
		}
		return e.dir, nil
	}
	if !create {
		return nil, nil
	}
	d := &dirNode{entries: map[string]*dirEntry{}}
	n.entries[name] = &dirEntry{mode: filemode.Dir, dir: d}
	return d, nil
}

func (n *dirNode) remove(st storer.EncodedObjectStorer, parts []string) error {
	if len(parts) == 1 {
		delete(n.entries, parts[0])
		return nil
	}
	d, err := n.child(st, parts[0], false)
	if err != nil || d == nil {
		return err
	}
	return d.remove(st, parts[1:])
}

func (n *dirNode) put(st storer.EncodedObjectStorer, parts []string, mode filemode.FileMode, h plumbing.Hash) error {
	if len(parts) == 1 {
		n.entries[parts[0]] = &dirEntry{mode: mode, hash: h}
		return nil
	}
	d, err := n.child(st, parts[0], true)
	if err != nil {
		return err
	}
	return d.put(st, parts[1:], mode, h)
}

// write stores n (and its edited subtrees) and returns its hash; empty reports
// a folder with no entries, which Git does not keep.
func (n *dirNode) write(st storer.EncodedObjectStorer) (h plumbing.Hash, empty bool, err error) {
	t := &object.Tree{}
	for name, e := range n.entries {
		if e.dir != nil {
			sub, subEmpty, err := e.dir.write(st)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if subEmpty {
				continue
			}
			e.hash = sub
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
	}
	if len(t.Entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	obj := st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err = st.SetEncodedObject(obj)
	return h, false, err
}

// gitAuth picks credentials for url's scheme from the environment.
func gitAuth(rawURL string, o *options) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, err
	}
	switch ep.Protocol {
	case "http", "https":
		if tok := o.env(EnvGitToken); tok != "" {
			user := o.env(EnvGitUsername)
			if user == "" {
				user = "x-access-token"
			}
			return &githttp.BasicAuth{Username: user, Password: tok}, nil
		}
		return nil, nil
	case "ssh":
		user := ep.User
		if user == "" {
			user = gitssh.DefaultUsername
		}
		if key := o.env(EnvGitSSHKey); key != "" {
			a, err := gitssh.NewPublicKeysFromFile(user, key, o.env(EnvGitSSHPassphrase))
			if err != nil {
				return nil, fmt.Errorf("ssh key %s: %w", EnvGitSSHKey, err)
			}
			return a, nil
		}
		if os.Getenv("SSH_AUTH_SOCK") != "" {
			a, err := gitssh.NewSSHAgentAuth(user)
			if err != nil {
				return nil, fmt.Errorf("ssh agent: %w", err)
			}
			return a, nil
		}
		home, _ := os.UserHomeDir()
		for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			p := filepath.Join(home, ".ssh", k)
			if _, err := os.Stat(p); err == nil {
				a, err := gitssh.NewPublicKeysFromFile(user, p, o.env(EnvGitSSHPassphrase))
				if err != nil {
					return nil, fmt.Errorf("ssh key %s: %w", p, err)
				}
				return a, nil
			}
		}
		return nil, fmt.Errorf("no SSH credentials: set %s, run an SSH agent, or add ~/.ssh/id_ed25519", EnvGitSSHKey)
	default:
		return nil, nil
	}
}

// normalizeGitURL makes a local path absolute; URLs pass unchanged.
func normalizeGitURL(u string) (string, error) {
	if strings.Contains(u, "://") {
		return u, nil
	}
	if ep, err := transport.NewEndpoint(u); err == nil && ep.Protocol == "ssh" {
		return u, nil // scp-like git@host:repo
	}
	return filepath.Abs(u)
}

// redact drops any user info (a token in the URL) before showing a URL.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

var authorRE = regexp.MustCompile(`^\s*([^<>]*[^<>\s])\s*<([^<>\s]+)>\s*$`)

// parseAuthor splits "Name <email>".
func parseAuthor(s string) (name, email string, err error) {
	m := authorRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", fmt.Errorf("author %q: want \"Name <email>\"", s)
	}
	return m[1], m[2], nil
}

// validBranch rejects names Git does not allow as a branch.
func validBranch(b string) error {
	if b == "" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.Contains(b, "..") || strings.Contains(b, "//") ||
		strings.ContainsAny(b, " ~^:?*[\\\x7f") || strings.Contains(b, "@{") {
		return errors.New("not a valid branch name")
	}
	for _, r := range b {
		if r < 0x20 {
			return errors.New("not a valid branch name")
		}
	}
	return nil
}
