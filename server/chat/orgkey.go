package chat

import (
	"strings"

	"github.com/parleyhq/parley/server/apierr"
	"github.com/parleyhq/parley/server/auth"
	"github.com/parleyhq/parley/server/limits"
	"github.com/parleyhq/parley/server/models"
)

// keyAllows reports whether p may use m, asked for as asked: always for a
// person; for an organisation's key, when its model list permits it.
func (c *Core) keyAllows(p auth.Principal, asked string, m *models.Model) bool {
	return p.Org == nil || c.Models.Permits(p.Org.Models, asked, m)
}

// keyRefuses is the error for a model the key may not use: not_found on
// the model field (as OpenAI answers a project key without access), with
// the models it may use.
func keyRefuses(p auth.Principal, asked string) error {
	return apierr.NotFoundModel("model", asked, "this API key may not use "+asked+"; it may use "+strings.Join(p.Org.Models, ", "))
}

// keyRates are an organisation key's own rates (none for a person).
func keyRates(p auth.Principal) limits.KeyRates {
	if p.Org == nil {
		return limits.KeyRates{}
	}
	return limits.KeyRates{RequestsPerMinute: p.Org.RPM, TokensPerMinute: p.Org.TPM}
}
