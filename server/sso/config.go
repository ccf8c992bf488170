package sso

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is the identity provider's settings: `parley serve --oidc-*`.
type Config struct {
	// Issuer is the provider's issuer URL; empty turns single sign-on off.
	Issuer string
	// ClientID and ClientSecret are the gateway's client at the provider.
	// An empty secret makes a public client (PKCE alone).
	ClientID, ClientSecret, ClientSecretFile string
	// RedirectURL is CallbackPath's full URL as browsers reach the
	// gateway, registered at the provider.
	RedirectURL string
	// Name labels the sign-in button.
	Name string
	// Scopes are asked for besides openid.
	Scopes string
	// GroupsClaim names the ID token claim that lists the person's groups.
	GroupsClaim string
	// ClockSkew is how far the provider's clock may be from the gateway's.
	ClockSkew time.Duration
}

// RegisterFlags registers the settings with their defaults, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Issuer, "oidc-issuer", "", "OpenID Connect provider's issuer URL (https, or http on a loopback address); set, the web app offers sign-in through it (docs/sso.md)")
	fs.StringVar(&c.ClientID, "oidc-client-id", "", "the gateway's client id at the OpenID Connect provider")
	fs.StringVar(&c.ClientSecret, "oidc-client-secret", "", "the client's secret (empty: a public client, PKCE only)")
	fs.StringVar(&c.ClientSecretFile, "oidc-client-secret-file", "", "file holding the client's secret (instead of --oidc-client-secret)")
	fs.StringVar(&c.RedirectURL, "oidc-redirect-url", "", "the URL of "+CallbackPath+" as browsers reach this gateway, registered at the provider, e.g. https://chat.example.com"+CallbackPath)
	fs.StringVar(&c.Name, "oidc-name", "single sign-on", "what the web app's sign-in button calls the provider")
	fs.StringVar(&c.Scopes, "oidc-scopes", "email,profile", "scopes asked for besides openid, comma-separated (add the one that makes your provider send groups, if it needs one)")
	fs.StringVar(&c.GroupsClaim, "oidc-groups-claim", "groups", "the ID token claim listing the person's groups, which teams with an SSO group follow")
	fs.DurationVar(&c.ClockSkew, "oidc-clock-skew", time.Minute, "how far the provider's clock may be from this one when checking an ID token's expiry")
}

// Enabled reports whether single sign-on is configured.
func (c Config) Enabled() bool { return c.Issuer != "" }

// Validate reports settings that cannot work and reads the secret file.
func (c *Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	if err := providerURL("--oidc-issuer", c.Issuer); err != nil {
		return err
	}
	if err := providerURL("--oidc-redirect-url", c.RedirectURL); err != nil {
		return err
	}
	if u, _ := url.Parse(c.RedirectURL); u.Path != CallbackPath {
		return fmt.Errorf("--oidc-redirect-url %q must end in %s, where the gateway serves the callback", c.RedirectURL, CallbackPath)
	}
	switch {
	case c.ClientID == "":
		return fmt.Errorf("--oidc-client-id is required with --oidc-issuer")
	case c.GroupsClaim == "":
		return fmt.Errorf("--oidc-groups-claim must name a claim")
	case c.ClockSkew < 0 || c.ClockSkew > 10*time.Minute:
		return fmt.Errorf("--oidc-clock-skew %v must be between 0 and 10m", c.ClockSkew)
	case c.ClientSecretFile != "" && c.ClientSecret != "":
		return fmt.Errorf("give --oidc-client-secret or --oidc-client-secret-file, not both")
	}
	if c.ClientSecretFile != "" {
		b, err := os.ReadFile(c.ClientSecretFile)
		if err != nil {
			return fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		c.ClientSecret = strings.TrimSpace(string(b))
	}
	return nil
}

// providerURL accepts https URLs, and http ones on loopback addresses
// (a provider on the same machine, in development and tests).
func providerURL(flagName, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute URL", flagName, s)
	}
	if u.Scheme == "https" {
		return nil
	}
	ip := net.ParseIP(u.Hostname())
	if u.Scheme == "http" && (u.Hostname() == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%s %q must be https (http only on a loopback address)", flagName, s)
}

func (c Config) scopes() []string {
	out := []string{"openid"}
	for _, s := range strings.Split(c.Scopes, ",") {
		if s = strings.TrimSpace(s); s != "" && s != "openid" {
			out = append(out, s)
		}
	}
	return out
}
