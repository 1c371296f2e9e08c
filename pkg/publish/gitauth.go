package publish

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

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
