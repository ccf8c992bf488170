package auth

import "flag"

// RegisterFlags registers the authenticator's settings that `parley serve`
// takes on their own (the sign-up policy and the login throttle), with their
// defaults, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.LoginRate, "login-rate", DefaultLoginRate, "Login and SignUp attempts allowed per minute per client IP (an IPv6 one by its /64), and SignUp per email; wrong passwords back off per account and address")
	c.SignUp = SignUpOpen
	fs.Var(&c.SignUp, "signup", "who may sign up, by `policy`: open, anyone (the default, so that a fresh embedded gateway can be tried in the browser at once; choose invite or closed for a public deployment); invite, only with an unused code from parley admin create-invite or AdminService.CreateInvitation; closed, no one (accounts come from parley admin create-user)")
	fs.Int64Var(&c.SignUpRateGlobal, "signup-rate-global", DefaultSignUpRateGlobal, "sign-ups allowed per minute from all addresses together (every gateway sharing the limiter), on top of --login-rate per address")
}
