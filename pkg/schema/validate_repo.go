package schema

import (
	"regexp"
	"regexp/syntax"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// The rules SPEC §1 sets on how a delivery reaches its repository: no
// credential in the URL, no credential over plain HTTP, a branch or revision
// Git accepts, and Helm credentials only for chart URLs of hosts the
// helmRepoURLRegex names.

// repoCredentials reports why the Git URL raw carries a credential ("" when
// it does not): a password, or for http(s) and git:// any user name (forges
// take a token as the user name).
func repoCredentials(raw string) string {
	user, pw := repoUserinfo(raw)
	switch {
	case pw:
		return "it holds a password"
	case user != "" && !strings.HasPrefix(strings.ToLower(raw), "ssh://") && strings.Contains(raw, "://"):
		return "it holds a user name, which forges take a token as"
	}
	return ""
}

// gitRef reports why s is not a valid Git branch, tag or commit name ("" when
// it is), by git-check-ref-format's rules for refs/heads/<s>: no ASCII
// control character, space, ~ ^ : ? * [ \ or DEL, no "..", "@{" or "//", no
// component that starts with "." or ends with ".lock", not "@", not ending
// in "/" or ".", and, for fleetgen, not starting with "-" (git reads it as an
// option) or "/".
func gitRef(s string) string {
	const want = "want a Git branch, tag or commit (git check-ref-format)"
	switch {
	case s == "@" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.HasSuffix(s, "."):
		return want
	case strings.Contains(s, "..") || strings.Contains(s, "@{") || strings.Contains(s, "//"):
		return want
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return want
		}
	}
	for _, c := range strings.Split(s, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return want
		}
	}
	return ""
}

// helmRegex reports why re, a delivery's helmRepoURLRegex, would hand the
// Helm credentials to a host it does not name ("" when it would not): it
// must be anchored at the start (^), and each way it can match must spell the
// scheme and the whole host, up to the "/" after it, as literal text (so that
// "oci://contoso.azurecr.io.evil.example/" does not match); and none may be
// http:// (credentials in clear).
func helmRegex(re string) string {
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "want Go (RE2) syntax, e.g. ^oci://contoso\\.azurecr\\.io/"
	}
	alts, anchored := anchoredAlternatives(parsed.Simplify())
	if !anchored {
		return "it is not anchored at the start: want ^oci://HOST/ (Fleet hands the credentials to every chart URL it matches anywhere)"
	}
	for _, a := range alts {
		prefix := literalPrefix(a)
		scheme, rest, ok := strings.Cut(prefix, "://")
		if !ok || !strings.Contains(rest, "/") || strings.HasPrefix(rest, "/") {
			return "it admits any host: want each alternative to spell SCHEME://HOST/ in full, e.g. ^oci://contoso\\.azurecr\\.io/"
		}
		if strings.EqualFold(scheme, "http") {
			return "it admits http:// chart URLs, which would carry the credentials in clear: want https:// or oci://"
		}
	}
	return ""
}

// anchoredAlternatives returns the ways re can match after its start anchor
// (each a regexp), and whether every way starts with one.
func anchoredAlternatives(re *syntax.Regexp) ([]*syntax.Regexp, bool) {
	switch re.Op {
	case syntax.OpCapture:
		return anchoredAlternatives(re.Sub[0])
	case syntax.OpAlternate:
		var out []*syntax.Regexp
		for _, s := range re.Sub {
			alts, ok := anchoredAlternatives(s)
			if !ok {
				return nil, false
			}
			out = append(out, alts...)
		}
		return out, true
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return nil, false
		}
		first := re.Sub[0]
		if first.Op == syntax.OpBeginText {
			rest := &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1:]}
			return expand(rest), true
		}
		if first.Op == syntax.OpCapture || first.Op == syntax.OpAlternate {
			alts, ok := anchoredAlternatives(first)
			if !ok {
				return nil, false
			}
			var out []*syntax.Regexp
			for _, a := range alts {
				out = append(out, &syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{a}, re.Sub[1:]...)})
			}
			return out, true
		}
	}
	return nil, false
}

// expand splits a concatenation whose first part is an alternation (or a
// capture of one) into one concatenation per alternative.
func expand(re *syntax.Regexp) []*syntax.Regexp {
	if re.Op != syntax.OpConcat || len(re.Sub) == 0 {
		return []*syntax.Regexp{re}
	}
	first := re.Sub[0]
	for first.Op == syntax.OpCapture {
		first = first.Sub[0]
	}
	if first.Op != syntax.OpAlternate {
		return []*syntax.Regexp{re}
	}
	var out []*syntax.Regexp
	for _, a := range first.Sub {
		out = append(out, expand(&syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{a}, re.Sub[1:]...)})...)
	}
	return out
}

// literalPrefix returns the text every match of re starts with, as far as it
// is literal (case-sensitive).
func literalPrefix(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture:
		return literalPrefix(re.Sub[0])
	case syntax.OpConcat:
		var b strings.Builder
		for _, s := range re.Sub {
			p := literalPrefix(s)
			b.WriteString(p)
			if !fullyLiteral(s) {
				break
			}
		}
		return b.String()
	}
	return ""
}

func fullyLiteral(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return re.Flags&syntax.FoldCase == 0
	case syntax.OpCapture:
		return fullyLiteral(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !fullyLiteral(s) {
				return false
			}
		}
		return true
	case syntax.OpEmptyMatch:
		return true
	}
	return false
}

// repoRules checks delivery d at p against the rules above.
func (v *validator) repoRules(p string, d *Delivery) {
	if d.Repo != "" {
		if why := repoCredentials(d.Repo); why != "" {
			// The URL is not quoted: it holds the credential.
			v.add(problem.InvalidValue(p+".repo", "invalid repo: %s, and fleetgen writes it into Git: want the URL without credentials and clientSecretName naming a Secret that holds them", why))
		} else if d.ClientSecretName != "" && plainScheme(d.Repo) {
			v.add(problem.Other(p+".clientSecretName", "credential Secret %q for repo %q, which is plain %s: the credentials would cross the network in clear; want https:// or ssh://", d.ClientSecretName, d.Repo, strings.SplitN(d.Repo, ":", 2)[0]))
		}
	}
	if d.Branch != "" {
		if why := gitRef(d.Branch); why != "" {
			v.add(problem.InvalidValue(p+".branch", "invalid branch %q: %s", d.Branch, why))
		}
	}
	if d.Revision != "" {
		if why := gitRef(d.Revision); why != "" {
			v.add(problem.InvalidValue(p+".revision", "invalid revision %q: %s", d.Revision, why))
		}
	}
	if d.HelmRepoURLRegex != "" && d.HelmSecretName != "" {
		if _, err := regexp.Compile(d.HelmRepoURLRegex); err == nil {
			if why := helmRegex(d.HelmRepoURLRegex); why != "" {
				v.add(problem.InvalidValue(p+".helmRepoURLRegex", "invalid helmRepoURLRegex %q: %s", d.HelmRepoURLRegex, why))
			}
		}
	}
}

// plainScheme reports whether a Git URL goes over plain HTTP or git://.
func plainScheme(raw string) bool {
	l := strings.ToLower(raw)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "git://")
}
