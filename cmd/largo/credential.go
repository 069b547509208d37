package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"golang.org/x/term"

	"largo/client"
)

// credential is how a get or put signs in (a token, a user's password, a
// share link's password, or nothing) and where its secret came from, so
// that the command printed to resume gives it the same way, and an answer
// that refuses it can say which one was refused. No secret is printed
// that the user did not type on the command line: a secret from the
// environment or from a file is referred to by its variable or its file,
// and one typed at a prompt or given in the URL is asked for again.
type credential struct {
	kind credKind
	// user is the user name of a password (kindPassword).
	user string
	secret
}

// credKind is what a credential is.
type credKind int

const (
	kindNone     credKind = iota
	kindToken             // a bearer token
	kindPassword          // a user's password, sent as basic auth
	kindLink              // a share link's password, sent as basic auth
)

// secret is a secret and where it came from.
type secret struct {
	value string
	// from names the source in messages: "given with --token", "read
	// from FILE", "from $LARGO_PASSWORD", "typed at the prompt", "given
	// in the URL"; "" when there is none.
	from string
	// env is the assignment the resume command starts with, when the
	// secret came from the environment: LARGO_TOKEN="$LARGO_TOKEN".
	env string
	// args are the resume command's words that carry the secret.
	args []string
}

// The flags a credential comes from, and the variables that hold a
// password (a password has no flag of its own: it would show in every
// process listing).
const (
	tokenFlag        = "token"
	tokenFileFlag    = "token-file"
	userFlag         = "user"
	passwordFileFlag = "password-file"
	linkPassFileFlag = "link-password-file"
	passwordEnv      = "LARGO_PASSWORD"
	linkPasswordEnv  = "LARGO_LINK_PASSWORD"
)

// credentialFlags are the values of the flags a credential comes from.
type credentialFlags struct {
	token, tokenFile string
	user             string
	passwordFile     string
	linkPasswordFile string
}

// urlCredentials takes the user name and password out of rawURL
// (http://NAME:PASSWORD@host/...), so that neither reaches a state file
// or a message: the URL without them, and what they were.
func urlCredentials(rawURL string) (clean string, user *url.Userinfo, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		if u != nil {
			u.User = nil
			rawURL = u.String()
		}
		return "", nil, usageErr(fmt.Errorf("%q is not an http or https URL", rawURL))
	}
	user, u.User = u.User, nil
	return u.String(), user, nil
}

// isShareLink reports whether rawURL is a largo share link.
func isShareLink(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && strings.HasPrefix(u.Path, client.SharePrefix)
}

// resolveCredential finds how a transfer to rawURL (a URL without
// credentials, those it held in inURL) signs in: a token (--token,
// --token-file, LARGO_TOKEN), a user's password (--user, with the password
// from --password-file, LARGO_PASSWORD, the URL or a prompt on a terminal)
// or, to a share link, the link's password (--link-password-file,
// LARGO_LINK_PASSWORD, the URL; a prompt comes when the link asks for it).
// A flag typed on the command line wins over a variable, as for every
// flag; a flag whose value is its variable's is taken as coming from the
// variable, so that the resume command names the variable.
func resolveCredential(f credentialFlags, rawURL string, inURL *url.Userinfo, e *env) (credential, error) {
	token, err := resolveToken(f.token, f.tokenFile, e.getenv)
	if err != nil {
		return credential{}, err
	}
	urlPass, hasURLPass := "", false
	urlUser := ""
	if inURL != nil {
		urlUser = inURL.Username()
		urlPass, hasURLPass = inURL.Password()
	}
	if isShareLink(rawURL) {
		switch {
		case f.user != "":
			return credential{}, usageErr(errors.New("--user: a share link signs in no user (a link's password: --link-password-file or $" + linkPasswordEnv + ")"))
		case f.passwordFile != "":
			return credential{}, usageErr(errors.New("--password-file is a user's password: a share link's is --link-password-file"))
		}
		s, err := fileOrEnv(f.linkPasswordFile, linkPassFileFlag, linkPasswordEnv, e.getenv)
		switch {
		case err != nil:
			return credential{}, err
		case s.value == "" && hasURLPass:
			s = secret{value: urlPass, from: "given in the URL"}
		}
		if s.value == "" {
			return credential{kind: token.kind, secret: token.secret}, nil
		}
		return credential{kind: kindLink, secret: s}, nil
	}
	if f.linkPasswordFile != "" {
		return credential{}, usageErr(errors.New("--link-password-file goes with a share link (" + client.SharePrefix + "...)"))
	}
	user := f.user
	if user == "" {
		user = urlUser
	}
	if user == "" && f.passwordFile != "" {
		return credential{}, usageErr(errors.New("--password-file: give the user with --user NAME"))
	}
	if user == "" && !hasURLPass {
		return token, nil
	}
	if token.kind != kindNone {
		return credential{}, usageErr(errors.New("--user and a token: give one"))
	}
	s, err := fileOrEnv(f.passwordFile, passwordFileFlag, passwordEnv, e.getenv)
	if err != nil {
		return credential{}, err
	}
	if s.value == "" && hasURLPass {
		s = secret{value: urlPass, from: "given in the URL"}
	}
	if s.value == "" {
		pw, ok, err := askSecret(e, "Password for "+user+": ")
		switch {
		case err != nil:
			return credential{}, err
		case !ok:
			return credential{}, usageErr(fmt.Errorf("--user %s: give the password with --password-file FILE or $%s (no terminal to ask it on)", user, passwordEnv))
		}
		s = secret{value: pw, from: "typed at the prompt"}
	}
	return credential{kind: kindPassword, user: user, secret: s}, nil
}

// resolveToken finds the token of a transfer from the values of --token
// and --token-file, which a variable of the environment may have set. A
// token file holds the token, with spaces around it or not (the same file
// as serve's --token-file).
func resolveToken(token, tokenFile string, getenv func(string) (string, bool)) (credential, error) {
	fromEnv := func(flag, v string) bool {
		ev, ok := getenv(envName(flag))
		return ok && v != "" && ev == v
	}
	tokenEnv, fileEnv := fromEnv(tokenFlag, token), fromEnv(tokenFileFlag, tokenFile)
	typedToken, typedFile := token != "" && !tokenEnv, tokenFile != "" && !fileEnv
	tok := func(s secret, err error) (credential, error) {
		return credential{kind: kindToken, secret: s}, err
	}
	switch {
	case typedToken && typedFile:
		return credential{}, usageErr(errors.New("--token and --token-file: give one"))
	case typedToken:
		return tok(secret{value: token, from: "given with --" + tokenFlag, args: []string{"--" + tokenFlag, token}}, nil)
	case typedFile || fileEnv && !tokenEnv:
		return tok(readSecretFile(tokenFileFlag, tokenFile, "token"))
	case tokenEnv && fileEnv:
		return credential{}, usageErr(fmt.Errorf("$%s and $%s: set one", envName(tokenFlag), envName(tokenFileFlag)))
	case tokenEnv:
		return tok(fromVariable(envName(tokenFlag), token), nil)
	}
	return credential{}, nil
}

// fileOrEnv finds a password: from the file the flag fileFlag names
// (file), else from the variable env; none is no error.
func fileOrEnv(file, fileFlag, env string, getenv func(string) (string, bool)) (secret, error) {
	if file != "" {
		return readSecretFile(fileFlag, file, "password")
	}
	if v, ok := getenv(env); ok && v != "" {
		return fromVariable(env, v), nil
	}
	return secret{}, nil
}

// fromVariable is the secret v of the variable env.
func fromVariable(env, v string) secret {
	return secret{value: v, from: "from $" + env, env: env + `="$` + env + `"`}
}

// readSecretFile reads the secret (what: "token", "password") of the
// file flag names: the file's content without the spaces around it.
func readSecretFile(flag, path, what string) (secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return secret{}, usageErr(fmt.Errorf("--%s %s: %v", flag, path, pathErrText(err)))
	}
	v := strings.TrimSpace(string(b))
	switch {
	case v == "":
		return secret{}, usageErr(fmt.Errorf("--%s %s: the file holds no %s", flag, path, what))
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return secret{}, usageErr(fmt.Errorf("--%s %s: the %s is more than one line", flag, path, what))
	}
	return secret{value: v, from: "read from " + path, args: []string{"--" + flag, path}}, nil
}

// askSecret asks for a secret on the terminal, without echo; ok is false
// when standard input is no terminal.
func askSecret(e *env, prompt string) (_ string, ok bool, _ error) {
	f, isFile := e.stdin.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return "", false, nil
	}
	fmt.Fprint(e.stderr, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", false, failed(err)
	}
	return string(b), true, nil
}

// apply gives c the credential.
func (cr credential) apply(c *client.Client) {
	c.Token, c.User, c.Password, c.LinkPassword = "", "", "", ""
	switch cr.kind {
	case kindToken:
		c.Token = cr.value
	case kindPassword:
		c.User, c.Password = cr.user, cr.value
	case kindLink:
		c.LinkPassword = cr.value
	}
}

// command is cmd (shell-quoted words) with the credential: the
// environment assignment before it, the flags after it. A password typed
// at the prompt or given in the URL is left out, and asked for again.
func (cr credential) command(cmd string) string {
	if cr.kind == kindPassword {
		cmd += " --" + userFlag + " " + shellQuote(cr.user)
	}
	for _, a := range cr.args {
		cmd += " " + shellQuote(a)
	}
	if cr.env != "" {
		cmd = cr.env + " " + cmd
	}
	return cmd
}

// How each kind of credential is given, for the advice of a refusal.
const (
	giveToken    = "--token TOKEN, --token-file FILE or $LARGO_TOKEN"
	givePassword = "--user NAME with --password-file FILE, $" + passwordEnv + " or at the prompt"
	giveLink     = "--link-password-file FILE, $" + linkPasswordEnv + " or at the prompt"
)

// The reasons of largo's refusals that a credential decides: a rule that
// does not let the principal do it, and a share link's password (missing
// or wrong). Any other refusal (a pre-upload hook's, a drop box's) is the
// server's own word, and no credential changes it.
const (
	reasonRule     = "forbidden: not allowed on this path"
	reasonLinkPass = "share link needs its password"
)

// refused is the message of an answer that refuses a request (401, 403):
// what the server said, and, when a credential decides it, what to do. A
// refusal that is no credential's (a pre-upload hook's message, a drop
// box that keeps names taken) is the server's word alone.
func (cr credential) refused(se *client.StatusError, err error, link bool) error {
	who := map[credKind]string{
		kindToken:    "the token " + cr.from,
		kindPassword: "the user " + cr.user + " (the password " + cr.from + ")",
		kindLink:     "the link's password " + cr.from,
	}[cr.kind]
	switch {
	case link && (se.Code == 401 || strings.Contains(se.Reason, reasonLinkPass)):
		if cr.kind == kindLink {
			return fmt.Errorf("%v: the server refused the link's password %s: run again with the right one (%s)", err, cr.from, giveLink)
		}
		return fmt.Errorf("%v: this share link needs its password: run again with it (%s)", err, giveLink)
	case se.Code == 401 && cr.kind == kindNone:
		return fmt.Errorf("%v: the server wants a sign-in: run again with a user (%s) or a token (%s)", err, givePassword, giveToken)
	case se.Code == 401 && cr.kind == kindPassword:
		return fmt.Errorf("%v: the server refused the password of %s %s: run again with the right one (%s)", err, cr.user, cr.from, givePassword)
	case se.Code == 401:
		return fmt.Errorf("%v: the server refused %s: run again with the right one (%s)", err, who, giveToken)
	case se.Code == 403 && se.Reason == reasonRule && cr.kind == kindNone:
		return fmt.Errorf("%v: the access rules let no one do this here without signing in: run again as a user (%s) or with a token (%s)", err, givePassword, giveToken)
	case se.Code == 403 && se.Reason == reasonRule && cr.kind == kindPassword:
		return fmt.Errorf("%v: the access rules do not let %s do this here: run again as a user who may (%s)", err, cr.user, givePassword)
	case se.Code == 403 && se.Reason == reasonRule:
		return fmt.Errorf("%v: the access rules do not let %s do this here: run again with one that may (%s)", err, who, giveToken)
	}
	return err
}
