package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-git/go-git/v5/utils/merkletrie"
)

// Git commits the render (rendered, paths relative to spec.source.path) at
// spec.source.path, plus every layer folder of the source root at its own
// path, to spec.source's branch and pushes without force, retrying on a moved
// head a bounded number of times.
//
// It fetches the branch spec.source.ref from spec.source.url (or WithPushURL:
// https://, http://, ssh://, git://, file:// or a local path); an empty
// repository or a missing branch starts the branch. It owns files, not
// folders (SPEC §6):
//
//   - a rendered file is written at its path; a file there that does not
//     carry layout.Header (someone else's) is never overwritten: the publish
//     is refused (*ForeignFileError);
//   - a file carrying layout.Header that this render no longer writes is
//     removed, inside spec.source.path (or with path "" inside the rendered
//     top-level entries manager/, clusters/, agents/ and .sops.yaml) only;
//   - a layer folder's file is written as the source root holds it (the
//     source root is the truth for the files it has);
//   - a file in a layer's top-level folder that the source root lacks is
//     removed only when a publish of this fleet put it there: the last commit
//     along the branch's first-parent history that changed it is one of this
//     fleet's publish commits. A file anyone else added or changed is kept;
//   - every other file of the branch (flux-system/ that `flux bootstrap`
//     committed, a README, another team's folder) is kept byte for byte.
//
// An unchanged tree makes no commit (Result.Changed false). The commit
// message names the fleet and InputDigest; the author is WithAuthor, else
// FLEETGEN_GIT_AUTHOR, else DefaultAuthor. When the branch moved under the
// push, Git fetches it and redoes its commit on the new head, up to
// WithRetries more times, then fails.
//
// HTTPS uses FLEETGEN_GIT_TOKEN as basic auth password; SSH uses
// FLEETGEN_GIT_SSH_KEY, else the SSH agent, else the default keys, and checks
// host keys against known_hosts (SSH_KNOWN_HOSTS or ~/.ssh/known_hosts). The
// work happens in memory; nothing is written to disk. Local paths and file://
// use go-git's file transport, which runs git-upload-pack/git-receive-pack.
func Git(ctx context.Context, f *schema.Fleet, l *lock.Lock, rendered []layout.File, opts ...Option) (Result, error) {
	o, err := newOptions(opts)
	if err != nil {
		return Result{}, err
	}
	target, shown, branch, err := gitTarget(f, o)
	if err != nil {
		return Result{}, err
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
		return Result{}, problem.Invalid(fmt.Errorf("publish: %s: %w", EnvGitAuthor, err))
	}
	digest, err := InputDigest(f, l)
	if err != nil {
		return Result{}, err
	}
	c, err := collect(f, rendered, o)
	if err != nil {
		return Result{}, err
	}
	auth, err := gitAuth(target, o)
	if err != nil {
		return Result{}, fmt.Errorf("publish to %s: %w", shown, err)
	}

	// A Published fetched from the same target lends its objects: the first
	// fetch below then brings only what changed since.
	var st *memory.Storage
	var remote *git.Remote
	if pub := o.published; pub != nil && pub.st != nil && pub.target == target && pub.branch == branch {
		st, remote = pub.st, pub.remote
	} else if st, remote, err = newGitRemote(target); err != nil {
		return Result{}, err
	}
	// Blobs do not change between attempts: write them once.
	blobs, err := writeBlobs(st, c)
	if err != nil {
		return Result{}, err
	}
	localRef := plumbing.NewBranchReferenceName(branch)
	remoteRef := plumbing.NewRemoteReferenceName("origin", branch)
	msg := commitPrefix(f.Metadata.Name) + digest + ")\n"
	if line := o.sourceLine(); line != "" {
		msg += "\n" + line + "\n"
	}

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
		treeHash, err := buildTree(st, head, baseTree, c, blobs, f.Metadata.Name)
		var foreign *ForeignFileError
		if errors.As(err, &foreign) {
			return Result{}, fmt.Errorf("publish to %s: %w", shown, err)
		}
		if err != nil {
			return Result{}, fmt.Errorf("publish to %s: build tree: %w", shown, err)
		}
		if treeHash == baseTree {
			o.logger.Info("branch already holds this tree; nothing to commit", "url", shown, "branch", branch, "commit", head.String())
			if o.dryRun != nil {
				if _, err := fmt.Fprintf(o.dryRun, "publish: %s branch %s already holds this tree: nothing to commit\n", shown, branch); err != nil {
					return Result{}, err
				}
			}
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
		if o.dryRun != nil {
			if err := writeChanges(o.dryRun, st, baseTree, treeHash, shown, branch, head); err != nil {
				return Result{}, fmt.Errorf("publish to %s: dry run: %w", shown, err)
			}
			o.logger.Info("dry run: not pushing", "url", shown, "branch", branch, "commit", commitHash.String())
			return Result{Changed: true, Revision: commitHash.String(), Files: len(c.files), Attempts: attempt}, nil
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

// gitTarget is where Git pushes: the URL (WithPushURL, else spec.source.url;
// a local path made absolute), that URL with credentials redacted for
// messages, and the branch (spec.source.ref, default main).
func gitTarget(f *schema.Fleet, o *options) (target, shown, branch string, err error) {
	target = o.pushURL
	if target == "" {
		target = f.Spec.Source.URL
	}
	if target == "" {
		return "", "", "", problem.Invalid(errors.New("publish: spec.source.url is empty and no push URL was given"))
	}
	target, err = normalizeGitURL(target)
	if err != nil {
		return "", "", "", problem.Invalid(fmt.Errorf("publish: push URL %s: %w", redact(target), err))
	}
	branch = f.Spec.Source.Ref
	if branch == "" {
		branch = "main"
	}
	if err := validBranch(branch); err != nil {
		return "", "", "", problem.Invalid(fmt.Errorf("publish: spec.source.ref %q: %w", branch, err))
	}
	return target, redact(target), branch, nil
}

// newGitRemote is an empty in-memory repository with target as its remote
// origin.
func newGitRemote(target string) (*memory.Storage, *git.Remote, error) {
	st := memory.NewStorage()
	repo, err := git.Init(st, nil)
	if err != nil {
		return nil, nil, err
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{target}})
	if err != nil {
		return nil, nil, err
	}
	return st, remote, nil
}

// writeChanges writes what the commit of tree newTree on baseTree (of head;
// zero: a new branch) changes: "A path", "M path" or "D path" per file,
// sorted by path, after a line naming the target.
func writeChanges(w io.Writer, st storer.EncodedObjectStorer, baseTree, newTree plumbing.Hash, shown, branch string, head plumbing.Hash) error {
	var from *object.Tree
	if !baseTree.IsZero() {
		t, err := object.GetTree(st, baseTree)
		if err != nil {
			return err
		}
		from = t
	}
	to, err := object.GetTree(st, newTree)
	if err != nil {
		return err
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return err
	}
	var lines []string
	for _, ch := range changes {
		action, err := ch.Action()
		if err != nil {
			return err
		}
		switch action {
		case merkletrie.Insert:
			lines = append(lines, ch.To.Name+"\x00A")
		case merkletrie.Delete:
			lines = append(lines, ch.From.Name+"\x00D")
		default:
			lines = append(lines, ch.To.Name+"\x00M")
		}
	}
	sort.Strings(lines)
	base := "a new branch"
	if !head.IsZero() {
		base = head.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "publish (dry run): would commit to %s branch %s on %s, changing %d files:\n", shown, branch, base, len(lines))
	for _, l := range lines {
		p, a, _ := strings.Cut(l, "\x00")
		fmt.Fprintf(&b, "%s %s\n", a, shownPath(p))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// shownPath is p for a listing: inert.Quote, bare when plain, else quoted
// with every control, bidirectional or invisible character escaped (layer
// folders come from pull requests: a name with a newline must not pass for
// another line, nor a name for another name, nor start a workflow command).
func shownPath(p string) string {
	return inert.Quote(p)
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

// ForeignFileError refuses a publish that would overwrite a file of the
// branch that fleetgen did not write (no layout.Header), or that needs a
// folder where the branch holds a file, or a file where it holds a folder.
type ForeignFileError struct {
	// Paths are the conflicting paths of the branch, sorted.
	Paths []string
}

func (e *ForeignFileError) Error() string {
	return fmt.Sprintf("nothing pushed: the branch holds %d path(s) that fleetgen did not write where this publish would write "+
		"(move or remove them, or set spec.source.path to another folder):\n  %s", len(e.Paths), strings.Join(e.Paths, "\n  "))
}

// commitPrefix starts the message of every publish commit of fleet; the
// history rule for layer folders recognises this fleet's commits by it.
func commitPrefix(fleet string) string { return "fleetgen: publish " + fleet + " (input " }

// maxHistory bounds how many first-parent commits the layer-folder rule walks
// back; a file whose last change lies further back is kept.
const maxHistory = 10000

// buildTree returns the hash of the tree baseTree (of commit head) with c
// published into it under the ownership rules Git documents, writing new
// tree objects to st. Subtrees it does not touch keep their hash.
func buildTree(st storer.EncodedObjectStorer, head, baseTree plumbing.Hash, c *content, blobs map[string]plumbing.Hash, fleet string) (plumbing.Hash, error) {
	root, err := loadDir(st, baseTree)
	if err != nil {
		return plumbing.ZeroHash, err
	}

	// Files of the rendered area this render lacks: removed when fleetgen
	// wrote them, never in a cluster's flux-system/ (below spec.source.path).
	var remove []string
	for _, scope := range c.rendered {
		err := root.walk(st, scope, func(p string, e *dirEntry) error {
			if _, ok := c.files[p]; ok || !isFile(e.mode) || layout.FluxSystem(strings.TrimPrefix(p, c.base+"/")) {
				return nil
			}
			ours, err := hasHeader(st, e.hash)
			if ours {
				remove = append(remove, p)
			}
			return err
		})
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	// Files of the layer folders the source root lacks: removed when a publish
	// of this fleet put them there.
	var candidates []string
	for _, scope := range c.layers {
		err := root.walk(st, scope, func(p string, e *dirEntry) error {
			if _, ok := c.files[p]; ok || !isFile(e.mode) || inAny(p, c.rendered) {
				return nil
			}
			candidates = append(candidates, p)
			return nil
		})
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if len(candidates) > 0 {
		owned, err := ownedByHistory(st, head, candidates, commitPrefix(fleet))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, p := range candidates {
			if owned[p] {
				remove = append(remove, p)
			}
		}
	}
	for _, p := range remove {
		if err := root.remove(st, strings.Split(p, "/")); err != nil {
			return plumbing.ZeroHash, err
		}
	}

	var foreign []string
	for _, p := range c.paths() {
		fl := c.files[p]
		mode := filemode.Regular
		if fl.exec {
			mode = filemode.Executable
		}
		old, conflict, err := root.lookup(st, strings.Split(p, "/"))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch {
		case conflict != "":
			foreign = append(foreign, conflict)
			continue
		case old == nil:
		case old.hash == blobs[p] && old.mode == mode:
			continue
		case !fl.layer:
			ours, err := hasHeader(st, old.hash)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if !ours || !isFile(old.mode) {
				foreign = append(foreign, p)
				continue
			}
		}
		if err := root.put(st, strings.Split(p, "/"), mode, blobs[p]); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s: %w", p, err)
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return plumbing.ZeroHash, &ForeignFileError{Paths: slices.Compact(foreign)}
	}
	h, _, err := root.write(st)
	return h, err
}

// isFile reports whether a tree entry is a regular or executable file (not a
// folder, symlink or submodule).
func isFile(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// inAny reports whether p is inside one of roots.
func inAny(p string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return within(p, r) })
}

// hasHeader reports whether blob h starts with layout.Header.
func hasHeader(st storer.EncodedObjectStorer, h plumbing.Hash) (bool, error) {
	obj, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return false, fmt.Errorf("read blob %s: %w", h, err)
	}
	if obj.Size() < int64(len(layout.Header)) {
		return false, nil
	}
	r, err := obj.Reader()
	if err != nil {
		return false, err
	}
	defer r.Close()
	buf := make([]byte, len(layout.Header))
	if _, err := io.ReadFull(r, buf); err != nil {
		return false, fmt.Errorf("read blob %s: %w", h, err)
	}
	return string(buf) == layout.Header, nil
}

// ownedByHistory returns which of paths (files of head's tree) were last
// changed, along head's first-parent history, by a commit whose message
// starts with prefix. The walk stops after maxHistory commits or at a commit
// the fetch did not bring (a shallow history); paths unresolved by then are
// not owned.
func ownedByHistory(st storer.EncodedObjectStorer, head plumbing.Hash, paths []string, prefix string) (map[string]bool, error) {
	owned := map[string]bool{}
	// Pending paths by their top-level folder: a commit that leaves that
	// folder's tree alone changed none of them.
	pending := map[string]map[string]bool{}
	for _, p := range paths {
		top := strings.SplitN(p, "/", 2)[0]
		if pending[top] == nil {
			pending[top] = map[string]bool{}
		}
		pending[top][p] = true
	}
	c, err := object.GetCommit(st, head)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", head, err)
	}
	for n := 0; len(pending) > 0 && n < maxHistory; n++ {
		tree, err := c.Tree()
		if err != nil {
			return nil, fmt.Errorf("read tree of %s: %w", c.Hash, err)
		}
		var parent *object.Commit
		var ptree *object.Tree
		if len(c.ParentHashes) > 0 {
			if parent, err = object.GetCommit(st, c.ParentHashes[0]); err != nil {
				break // a shallow history: what is left stays unresolved
			}
			if ptree, err = parent.Tree(); err != nil {
				return nil, fmt.Errorf("read tree of %s: %w", parent.Hash, err)
			}
		}
		ours := strings.HasPrefix(c.Message, prefix)
		for top, ps := range pending {
			if entryHash(tree, top) == entryHash(ptree, top) {
				continue
			}
			for p := range ps {
				if entryHash(tree, p) != entryHash(ptree, p) {
					owned[p] = ours
					delete(ps, p)
				}
			}
			if len(ps) == 0 {
				delete(pending, top)
			}
		}
		if parent == nil {
			break
		}
		c = parent
	}
	return owned, nil
}

// entryHash is the hash of the entry at slash path p of t, zero when t is nil
// or lacks it.
func entryHash(t *object.Tree, p string) plumbing.Hash {
	if t == nil {
		return plumbing.ZeroHash
	}
	e, err := t.FindEntry(p)
	if err != nil {
		return plumbing.ZeroHash
	}
	return e.Hash
}
