package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// kubeconfig is the part of a kubeconfig (clientcmd v1 Config) that
// CheckKubeconfig reads. A local struct, so that pkg/schema stays free of
// client-go; unknown fields are ignored, as kubectl ignores them.
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string `json:"name"`
		Cluster *struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Contexts []struct {
		Name    string `json:"name"`
		Context *struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Users []struct {
		Name string `json:"name"`
		User *struct {
			Token                 string `json:"token"`
			TokenFile             string `json:"tokenFile"`
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         string `json:"client-key-data"`
			Username              string `json:"username"`
			Password              string `json:"password"`
			Exec                  any    `json:"exec"`
			AuthProvider          any    `json:"auth-provider"`
		} `json:"user"`
	} `json:"users"`
}

// yamlLine finds the line number in a YAML parser message, the only part of
// it CheckKubeconfig repeats (the rest may quote the input).
var yamlLine = regexp.MustCompile(`line (\d+)`)

// CheckKubeconfig parses a manager-mode kubeconfig and checks that its current
// context exists, its server is https and it carries credentials, and that it
// refers to no files (certificate-authority: /path and the like). The error never
// contains any part of the kubeconfig's content, not even the names of its
// contexts, clusters and users (the kubeconfig may come from the CI job's
// environment): it points at entries by their place, clusters[1].cluster.server.
// Problems are joined one per line; callers add the field path.
func CheckKubeconfig(data []byte) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		msg := "kubeconfig is not valid YAML"
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			msg += " (line " + m[1] + ")"
		}
		return errors.New(msg)
	}
	var kc kubeconfig
	if err := json.Unmarshal(js, &kc); err != nil {
		// The decoder's message names a field and a type, never a value;
		// still, say it in our words.
		return errors.New("kubeconfig is not a kubeconfig: want clusters, contexts and users as lists of {name, cluster|context|user} and current-context as a string")
	}

	var errs []error
	// Every file reference anywhere in the file is refused: Fleet reads the
	// kubeconfig from a Secret, where no path resolves.
	for i, c := range kc.Clusters {
		if c.Cluster != nil && c.Cluster.CertificateAuthority != "" {
			errs = append(errs, fmt.Errorf("clusters[%d].cluster.certificate-authority refers to a file; embed it as certificate-authority-data (base64 PEM) instead", i))
		}
	}
	for i, u := range kc.Users {
		if u.User == nil {
			continue
		}
		for _, ref := range []struct {
			set            bool
			field, instead string
		}{
			{u.User.ClientCertificate != "", "client-certificate", "client-certificate-data (base64 PEM)"},
			{u.User.ClientKey != "", "client-key", "client-key-data (base64 PEM)"},
			{u.User.TokenFile != "", "tokenFile", "token"},
		} {
			if ref.set {
				errs = append(errs, fmt.Errorf("users[%d].user.%s refers to a file; embed it as %s instead", i, ref.field, ref.instead))
			}
		}
	}

	if kc.CurrentContext == "" {
		errs = append(errs, errors.New("kubeconfig has no current-context; set it to the context fleetgen should use"))
		return errors.Join(errs...)
	}
	var ctxCluster, ctxUser string
	ctx := -1
	for i, c := range kc.Contexts {
		if c.Name == kc.CurrentContext && c.Context != nil {
			ctxCluster, ctxUser, ctx = c.Context.Cluster, c.Context.User, i
			break
		}
	}
	if ctx < 0 {
		errs = append(errs, errors.New("current-context names no context in contexts; set it to the name of one"))
		return errors.Join(errs...)
	}

	clusterFound := false
	for i, c := range kc.Clusters {
		if c.Name != ctxCluster || c.Cluster == nil {
			continue
		}
		clusterFound = true
		u, err := url.Parse(c.Cluster.Server)
		if c.Cluster.Server == "" || err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("clusters[%d].cluster.server must be an https:// URL (the current context's cluster)", i))
		}
		break
	}
	if !clusterFound {
		errs = append(errs, fmt.Errorf("contexts[%d].context.cluster names no entry of clusters (the current context's cluster)", ctx))
	}

	userFound := false
	for i, u := range kc.Users {
		if u.Name != ctxUser || u.User == nil {
			continue
		}
		userFound = true
		x := u.User
		hasCreds := x.Token != "" ||
			(x.ClientCertificateData != "" && x.ClientKeyData != "") ||
			x.Exec != nil || x.AuthProvider != nil ||
			(x.Username != "" && x.Password != "")
		if !hasCreds && !hasFileCreds(x.TokenFile, x.ClientCertificate, x.ClientKey) {
			errs = append(errs, fmt.Errorf("users[%d].user has no credentials (the current context's user); want token, client-certificate-data and client-key-data, exec, auth-provider, or username and password", i))
		}
		break
	}
	if !userFound {
		errs = append(errs, fmt.Errorf("contexts[%d].context.user names no entry of users (the current context's user)", ctx))
	}
	return errors.Join(errs...)
}

// hasFileCreds reports whether credentials were given as file references,
// already refused above with a clearer message than "no credentials".
func hasFileCreds(refs ...string) bool {
	return strings.Join(refs, "") != ""
}

// minTokenLen is the bearer token length from which CredentialUnguessable
// trusts a token to be random: Kubernetes service account tokens (JWTs) and
// Rancher tokens are far longer.
const minTokenLen = 32

// CredentialUnguessable reports whether a kubeconfig holds, for any user, a
// credential that no one can guess: embedded private key data or a bearer
// token of at least 32 characters. pkg/secrets uses it to pick the cost of
// the plaintext hash it stores (docs/secrets.md); anything it cannot parse
// counts as guessable.
func CredentialUnguessable(data []byte) bool {
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return false
	}
	for _, u := range kc.Users {
		if u.User == nil {
			continue
		}
		if len(u.User.Token) >= minTokenLen {
			return true
		}
		key, err := base64.StdEncoding.DecodeString(u.User.ClientKeyData)
		if err == nil && len(key) >= 64 && strings.Contains(string(key), "PRIVATE KEY") {
			return true
		}
	}
	return false
}
