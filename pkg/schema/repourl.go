package schema

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// The one answer to "is this our source" (SPEC §1): a Git URL names a
// repository by its host and path, not by its spelling. Every rule that
// compares a repository with spec.source.url (own-repo deliveries, the
// sources of followed Kustomizations) goes through SameRepo.

// OwnRepo reports whether the Git URL repo names the fleet's own source:
// spec.source is a Git repository and repo the same one (SameRepo).
func (f *Fleet) OwnRepo(repo string) bool {
	return f.Spec.Source.Kind == SourceGit && SameRepo(repo, f.Spec.Source.URL)
}

// SameRepo reports whether the Git URLs a and b name one repository:
// scheme (https, http, ssh, git, scp-style), user name and password, port,
// the case of host and path, percent-encoding, doubled, trailing and dot
// path segments and a .git suffix do not count (RepoIdentity). Two URLs of
// which either is not a Git URL are not the same.
func SameRepo(a, b string) bool {
	ka, kb := RepoIdentity(a), RepoIdentity(b)
	return ka != "" && ka == kb
}

// RepoIdentity returns the repository a Git URL names, "" when raw is not a
// Git URL: the host (lower case, without a port or a trailing dot) and the
// path (percent-decoded, cleaned, lower case, without a trailing / or
// .git). The port does not count either way: a forge serves one repository
// over https on 443 or another port and over ssh on 22 or another, and a
// rule that keeps a delivery out of the rendered tree must not be passed by
// spelling the same repository with a port. Forges resolve owner/repo
// without regard to case (GitHub, GitLab, Bitbucket, Gitea), so case does
// not count in the path either.
func RepoIdentity(raw string) string {
	host, p, ok := splitRepoURL(strings.TrimSpace(raw))
	if !ok {
		return ""
	}
	if h, err := url.PathUnescape(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	p = strings.ToLower(path.Clean("/" + p))
	p = path.Clean(strings.TrimSuffix(p, ".git"))
	if host == "" && (p == "/" || p == ".") {
		return ""
	}
	return host + p
}

// repoUserinfo returns the user name and password of a Git URL (scp-style
// too), and whether it has a password.
func repoUserinfo(raw string) (user string, hasPassword bool) {
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		authority, _, _ := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			u, _, pw := strings.Cut(authority[:i], ":")
			return u, pw
		}
		return "", false
	}
	if m := scpRepoRE.FindStringSubmatch(raw); m != nil {
		return m[1], false
	}
	return "", false
}

// scpRepoRE is Git's scp-like syntax, [user@]host:path (no slash before the
// colon, and a host of more than one character, which would be a Windows
// drive).
var scpRepoRE = regexp.MustCompile(`^(?:([^@/:]+)@)?([^@/:]{2,}|\[[^\]]*\]):(.*)$`)

// splitRepoURL splits a Git URL into host (port dropped) and path.
func splitRepoURL(raw string) (host, p string, ok bool) {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		m := scpRepoRE.FindStringSubmatch(raw)
		if m == nil {
			return "", "", false
		}
		return strings.Trim(m[2], "[]"), m[3], true
	}
	if scheme == "" || strings.ContainsAny(scheme, "/@:") {
		return "", "", false
	}
	authority, p, _ := strings.Cut(rest, "/")
	// A query or fragment is no part of the repository.
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if i := strings.IndexAny(authority, "?#"); i >= 0 {
		authority = authority[:i]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host = authority
	if strings.HasPrefix(host, "[") {
		if end := strings.IndexByte(host, ']'); end >= 0 {
			host = host[1:end]
		}
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return host, p, true
}
