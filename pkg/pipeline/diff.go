package pipeline

import (
	"bytes"
	"context"
	"maps"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/review"
)

// Diff renders in memory, as `render --check` does (no client ID invented:
// one a render would generate reads review.GeneratedClientID), and compares
// the render with o.OutDir, a previous render or a checkout of the
// published tree. It returns the per-cluster report and the unified file
// diff (Secret contents elided, as Check prints it). It writes nothing.
//
// When OutDir holds the layer folders (a checkout of the published tree),
// the report also lists, per cluster, the objects it receives that the
// change adds, removes or changes (receivedChanges).
//
// With o.Clusters, the report and the file diff hold only those clusters
// (review.Report.Only, layout.ClusterOf), and the lock's change is left out.
//
// Only files of OutDir that carry layout.Header take part: fleetgen's
// files, as tree.Read reads them for the file diff (OutDir is untrusted:
// symlinks, FIFOs and devices are never followed or read, nothing outside it
// is opened).
func Diff(ctx context.Context, cfg Config, o RenderOptions) (review.Report, string, error) {
	ld, err := loadFor(ctx, cfg, "diff", o.OutDir)
	if err != nil {
		return review.Report{}, "", err
	}
	keepPath, keep, manager, err := o.only(ld.Fleet)
	if err != nil {
		return review.Report{}, "", err
	}
	// --cluster against a render (no layer folder in DIR, so no received
	// objects to compare): only the part of DIR those clusters' report
	// reads is read, and compared. Not for the manager: its changes (a
	// group's members) read every cluster.
	var scope func(string) bool
	if keep != nil && !manager && !o.wholeTree && onlyTree(o.OutDir) {
		scope = review.Scope(keep)
	}
	r, d, err := checkLoaded(ctx, cfg, ld, o.OutDir, scope)
	if err != nil {
		return review.Report{}, "", err
	}
	if keepPath != nil {
		if d, err = r.fileDiff(o.OutDir, keepPath); err != nil {
			return review.Report{}, "", err
		}
	}
	had := owned(r.had)
	var (
		objs    map[string][]review.Object
		oldTags map[string]string
		old     *oldModel
	)
	if scope == nil {
		if objs, oldTags, old, err = receivedChanges(o, ld, had); err != nil {
			return review.Report{}, "", err
		}
	}
	tg := tags(r.lock)
	for ref, tag := range oldTags {
		if _, ok := tg[ref]; !ok {
			tg[ref] = tag // an image the change replaced, gone from the lock
		}
	}
	now := filesMap(r.files)
	rep := review.Compare(had, now, review.Options{GeneratedClientIDs: r.generated, Tags: tg})
	rep.AddObjects(objs)
	rep.AddImageVerification(ld.verificationChanges())
	nv := argoCDSees(ld.Fleet, ld.Model, now)
	if ov, ok := oldArgoCD(ld.Fleet, had, old, nv); ok {
		rep.AddApplications(applicationNames(ov), applicationNames(nv))
	}
	if keep != nil {
		rep = rep.Only(keep, manager)
	}
	// Drift is what exit 3 says: the file diff or the report, which also
	// counts what clusters receive from their layers.
	cfg.logger().Info("checked", "dir", o.OutDir, "files", len(r.files), "clusters", len(rep.Clusters), "drift", d != "" || !rep.Empty())
	return rep, d, nil
}

// tags maps each locked image's mirror reference pinned by digest to the tag
// it was pinned from (review.Options.Tags); an image locked by digest alone
// has none.
func tags(l *lock.Lock) map[string]string {
	m := map[string]string{}
	for _, img := range l.Images {
		_, tag := lock.SplitRef(img.Source)
		if tag == "" {
			_, tag = lock.SplitRef(img.Target)
		}
		if tag != "" {
			m[img.Pinned()] = tag
		}
	}
	return m
}

func filesMap(files []layout.File) map[string][]byte {
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		m[f.Path] = f.Data
	}
	return m
}

// owned drops from had, a tree.Read, the files without layout.Header and
// those in the clusters' flux-system/ folders (Flux's, whatever they hold),
// and returns it.
func owned(had map[string][]byte) map[string][]byte {
	maps.DeleteFunc(had, func(p string, b []byte) bool {
		return !bytes.HasPrefix(b, []byte(layout.Header)) || layout.FluxSystem(p)
	})
	return had
}
