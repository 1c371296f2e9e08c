package charts

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Key identifies what one render depends on: the chart's digest and every
// part of in that changes the rendered objects. Clusters whose HelmRelease,
// values, Kubernetes version and API versions agree share one render.
func Key(c *Chart, in Input) (string, error) {
	if in.Release == nil {
		return "", errors.New("no HelmRelease to render for")
	}
	rel := in.Release
	kv := in.KubeVersion
	if kv == "" {
		kv = DefaultKubeVersion
	}
	api := append([]string(nil), in.APIVersions...)
	sort.Strings(api)
	k := struct {
		Chart, Name, Namespace, HelmName, HelmNamespace, KubeVersion string
		APIVersions                                                  []string
		Values                                                       map[string]any
		Chart2                                                       *ChartTemplate
		Install                                                      *Install
		CommonMetadata                                               *CommonMetadata
		PostRenderers                                                []PostRenderer
		Strategy                                                     string
		Fleet                                                        bool
	}{
		c.Digest, rel.Name, rel.Namespace, rel.HelmName(), rel.HelmNamespace(), kv,
		api, in.Values, nil, rel.Spec.Install, rel.Spec.CommonMetadata, rel.Spec.PostRenderers, rel.Spec.PostRenderStrategy,
		rel.Fleet,
	}
	if t := rel.Spec.Chart; t != nil && len(t.Spec.ValuesFiles) > 0 {
		// Only the valuesFiles change what renders, not the source's name.
		k.Chart2 = &ChartTemplate{Spec: ChartTemplateSpec{ValuesFiles: t.Spec.ValuesFiles, IgnoreMissingValuesFiles: t.Spec.IgnoreMissingValuesFiles}}
	}
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("render key: %w", err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b)), nil
}

// Memo renders each distinct input once (Key) and hands the same Result to
// every caller: one per fleet, shared by every cluster. It is safe for
// concurrent use; concurrent callers of one key wait for one render. A
// render that was cancelled is not kept.
type Memo struct {
	mu      sync.Mutex
	entries map[string]*memoEntry
	renders int
}

type memoEntry struct {
	done chan struct{}
	res  *Result
	err  error
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{entries: map[string]*memoEntry{}} }

// Render is Render, once per Key.
func (m *Memo) Render(ctx context.Context, c *Chart, in Input, lim Limits) (*Result, error) {
	key, err := Key(c, in)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	e, ok := m.entries[key]
	if !ok {
		e = &memoEntry{done: make(chan struct{})}
		m.entries[key] = e
		m.renders++
	}
	m.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.res, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.res, e.err = Render(ctx, c, in, lim)
	if e.err != nil && ctx.Err() != nil {
		m.mu.Lock()
		delete(m.entries, key)
		m.mu.Unlock()
	}
	close(e.done)
	return e.res, e.err
}

// Renders returns how many renders Memo ran.
func (m *Memo) Renders() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renders
}
