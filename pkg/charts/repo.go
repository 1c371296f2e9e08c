package charts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
)

// maxIndexBytes bounds an HTTP chart repository's index.yaml (the largest
// public ones are tens of MiB).
const maxIndexBytes = 64 << 20

// Index is the part of a chart repository's index.yaml that fleetgen reads
// (helm.sh/helm/v4 pkg/repo/v1 IndexFile).
type Index struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string][]*ChartVersion `json:"entries"`
}

// ChartVersion is one entry of an index: a chart version and where its
// archive is.
type ChartVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	// Digest is the archive's sha256, hex, as `helm repo index` writes it;
	// "" when the index gives none.
	Digest string `json:"digest,omitempty"`
}

// ErrVersion is a chart version that is not one exact version (a semver
// range, a wildcard, empty), or one the repository does not have.
var ErrVersion = errors.New("chart version")

// ExactVersion checks that v names one chart version, not a range: a
// version is mirrored, locked and republished once, like an image tag.
func ExactVersion(v string) error {
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v")); err != nil {
		return fmt.Errorf("%w %s is not an exact version: want e.g. 1.2.3", ErrVersion, inert.Quote(v))
	}
	return nil
}

// FetchIndex reads repoURL/index.yaml (http or https) with client, at most
// maxIndexBytes. The caller sets the client's timeout and credentials.
func FetchIndex(ctx context.Context, client *http.Client, repoURL string) (*Index, error) {
	u, err := resolveURL(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	b, err := get(ctx, client, u, maxIndexBytes)
	if err != nil {
		return nil, err
	}
	ix := &Index{}
	if err := yaml.Unmarshal(b, ix); err != nil {
		return nil, fmt.Errorf("chart repository %s: index.yaml: %s", redactURL(repoURL), inert.Prose(err.Error()))
	}
	if ix.APIVersion == "" {
		return nil, fmt.Errorf("chart repository %s: index.yaml has no apiVersion: not a chart repository index", redactURL(repoURL))
	}
	return ix, nil
}

// Find returns the entry of chart at version, an exact version
// (ExactVersion): the entry written the same, else the one of the same
// semantic version, as Helm's IndexFile.Get prefers.
func (ix *Index) Find(chart, version string) (*ChartVersion, error) {
	if err := ExactVersion(version); err != nil {
		return nil, err
	}
	want, _ := semver.NewVersion(version)
	vs := ix.Entries[chart]
	for _, v := range vs {
		if v.Version == version {
			return v, nil
		}
	}
	for _, v := range vs {
		if got, err := semver.NewVersion(v.Version); err == nil && got.Equal(want) {
			return v, nil
		}
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%w: the repository has no chart %s", ErrVersion, inert.Quote(chart))
	}
	var have []string
	for _, v := range vs {
		have = append(have, v.Version)
	}
	sort.Strings(have)
	if len(have) > 5 {
		have = have[len(have)-5:]
	}
	q := make([]string, len(have))
	for i, h := range have {
		q[i] = inert.Quote(h)
	}
	return nil, fmt.Errorf("%w %s of chart %s is not in the repository (it has %s…)", ErrVersion, inert.Quote(version), inert.Quote(chart), strings.Join(q, ", "))
}

// FetchArchive downloads the archive of cv from the repository at repoURL
// (its first URL, resolved against repoURL as Helm does), at most
// lim.ArchiveBytes, and checks it against the index's digest (ErrDigest).
func FetchArchive(ctx context.Context, client *http.Client, repoURL string, cv *ChartVersion, lim Limits) ([]byte, error) {
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart repository %s: chart %s %s has no URL", redactURL(repoURL), inert.Quote(cv.Name), inert.Quote(cv.Version))
	}
	u, err := resolveURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, err
	}
	b, err := get(ctx, client, u, lim.ArchiveBytes)
	if err != nil {
		return nil, err
	}
	if cv.Digest != "" && "sha256:"+strings.ToLower(cv.Digest) != digestOf(b) {
		return nil, fmt.Errorf("chart %s %s from %s: the index says sha256:%s, the archive is %s: %w", inert.Quote(cv.Name), inert.Quote(cv.Version), redactURL(u), inert.Quote(cv.Digest), digestOf(b), ErrDigest)
	}
	return b, nil
}

// resolveURL is Helm's ResolveReferenceURL: ref as it is when absolute,
// else relative to base with a trailing slash, keeping base's query.
func resolveURL(base, ref string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("chart URL %s: %w", inert.Quote(ref), err)
	}
	if r.IsAbs() {
		return checkScheme(r)
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("chart repository URL %s: not a URL", redactURL(base))
	}
	b.RawPath = strings.TrimSuffix(b.RawPath, "/") + "/"
	b.Path = strings.TrimSuffix(b.Path, "/") + "/"
	out := b.ResolveReference(r)
	out.RawQuery = b.RawQuery
	return checkScheme(out)
}

func checkScheme(u *url.URL) (string, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("chart URL %s: want http or https", redactURL(u.String()))
	}
	return u.String(), nil
}

// get reads u, at most max bytes.
func get(ctx context.Context, client *http.Client, u string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %s", redactURL(u), redactErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", redactURL(u), resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redactURL(u), err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("GET %s: more than %d bytes: %w", redactURL(u), max, ErrLimit)
	}
	return b, nil
}

// redactURL returns u without its password, quoted inert.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		u = p.Redacted()
	}
	return inert.Quote(u)
}

// redactErr drops the URL net/http quotes in its errors (it may carry a
// password), keeping the reason.
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return inert.Prose(ue.Err.Error())
	}
	return inert.Prose(err.Error())
}
