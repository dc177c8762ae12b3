package detector

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// messages holds the text of every finding, keyed by rule id or
// "rule-id/variant" (a rule has either). {name} is replaced by the value the
// check passes for name, already formatted: templates add no quotes.
var messages = map[string]string{
	RuleSkillRemoved: "skill {skill} is no longer offered",
	RuleSkillAdded:   "skill {skill} is now offered",
	RuleSkillRenamed: "skill {before} is no longer offered; the same skill (modes, tags, security requirements) is now offered as {after}",

	RuleSkillInputModesChanged + "/narrowed":    "skill {skill} no longer accepts {removed}",
	RuleSkillInputModesChanged + "/widened":     "skill {skill} now also accepts {added}",
	RuleSkillInputModesChanged + "/replaced":    "skill {skill} no longer accepts {removed} and now accepts {added}",
	RuleSkillOutputModesChanged + "/narrowed":   "skill {skill} no longer produces {removed}",
	RuleSkillOutputModesChanged + "/widened":    "skill {skill} may now produce {added}, which the pinned card did not declare",
	RuleSkillOutputModesChanged + "/replaced":   "skill {skill} no longer produces {removed} and may now produce {added}",
	RuleDefaultInputModesChanged + "/narrowed":  "default input modes no longer accept {removed}",
	RuleDefaultInputModesChanged + "/widened":   "default input modes now also accept {added}",
	RuleDefaultInputModesChanged + "/replaced":  "default input modes no longer accept {removed} and now accept {added}",
	RuleDefaultOutputModesChanged + "/narrowed": "default output modes no longer include {removed}",
	RuleDefaultOutputModesChanged + "/widened":  "default output modes now also include {added}, which the pinned card did not declare",
	RuleDefaultOutputModesChanged + "/replaced": "default output modes no longer include {removed} and now include {added}",

	RuleStreamingDisabled:         "streaming is no longer supported: streaming calls will not get an event stream",
	RuleStreamingEnabled:          "streaming is now supported",
	RulePushNotificationsDisabled: "push notifications are no longer supported: push configuration calls will fail",
	RulePushNotificationsEnabled:  "push notifications are now supported",

	RuleExtendedCardChanged + "/withdrawn": "the authenticated extended card is no longer offered",
	RuleExtendedCardChanged + "/offered":   "an authenticated extended card is now offered",

	RuleExtensionRemoved:         "extension {uri} is no longer declared",
	RuleExtensionAdded:           "optional extension {uri} is now declared",
	RuleExtensionRequiredAdded:   "extension {uri} is now required: clients that do not support it will be refused",
	RuleExtensionRequiredRemoved: "extension {uri} is no longer required",
	RuleExtensionParamsChanged:   "parameters of extension {uri} changed",

	RuleSecuritySchemeRemoved: "security scheme {scheme} is no longer declared",
	RuleSecuritySchemeAdded:   "security scheme {scheme} is now declared",
	RuleSecuritySchemeChanged: "security scheme {scheme} changed: {fields}",
	RuleOAuthScopeRemoved:     "security scheme {scheme} no longer offers scope {scope} in flow {flow}",

	RuleSecurityRequirementsChanged + "/card":          "card security requirements changed from {before} to {after}",
	RuleSecurityRequirementsChanged + "/card-relaxed":  "card security requirements relaxed from {before} to {after}",
	RuleSecurityRequirementsChanged + "/skill":         "security requirements of skill {skill} changed from {before} to {after}",
	RuleSecurityRequirementsChanged + "/skill-relaxed": "security requirements of skill {skill} relaxed from {before} to {after}",

	RuleInterfaceChanged + "/removed":   "interface {binding} {url} is no longer offered",
	RuleInterfaceChanged + "/moved":     "{binding} interface moved from {before} to {after}",
	RuleInterfaceChanged + "/added":     "interface {binding} {url} is now offered",
	RuleInterfaceChanged + "/preferred": "preferred interface changed from {before} to {after}",
	RuleInterfaceChanged + "/tenant":    "tenant of interface {binding} {url} changed from {before} to {after}",

	RuleProtocolVersionChanged + "/interface": "protocol version of interface {binding} {url} changed from {before} to {after}",
	RuleProtocolVersionChanged + "/card":      "protocol versions of the card changed from {before} to {after}",

	RuleCardVersionChanged:           "card version changed from {before} to {after}",
	RuleContentChangedWithoutVersion: "card content changed ({facets}) but its version is still {version}",

	RuleDescriptiveTextChanged + "/name":                  "card name changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/description":           "card description changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/provider-organization": "provider organization changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/provider-url":          "provider URL changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/documentation-url":     "documentation URL changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/icon-url":              "icon URL changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/skill-name":            "name of skill {skill} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/skill-description":     "description of skill {skill} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/skill-tags":            "tags of skill {skill} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/skill-examples":        "examples of skill {skill} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/scheme-description":    "description of security scheme {scheme} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/scope-description":     "description of scope {scope} of security scheme {scheme} changed from {before} to {after}",
	RuleDescriptiveTextChanged + "/extension-description": "description of extension {uri} changed from {before} to {after}",

	RuleUnmodeledSkill:         "input request refers to skill {skill}, which the pinned card does not declare",
	RuleArtifactTypeUndeclared: "artifact {artifact} has media type {mediaType}, which the output modes {modes} of skill {skill} do not cover",
	RuleBlindRetry:             "attempt {attempt} of {method} retries error {code} without revalidating the card",
	RuleReplicasDisagree:       "replicas behind the agent's URL serve different cards ({digests}) within {window}: a task on it may meet either at its next step",
	RulePinnedCardUnknown:      "the task was planned against card {before}, which carddrift never saw; the live card is {after}: what changed cannot be listed",

	RuleCardNonconformant: "{reason}",

	RuleSignatureAdded:                      "the card is now signed ({signer})",
	RuleSignatureRemoved:                    "the card is no longer signed; the pinned card was ({signer})",
	RuleSignatureInvalid + "/pinned":        "the live card's signature by {signer} does not verify, yet that key verified the pinned card: the card was changed after it was signed",
	RuleSignatureInvalid + "/pinned-signer": "the live card's signature by {signer}, the key the pinned card's signature names, does not verify over the live card: the card was changed after it was signed",
	RuleSignatureInvalid + "/trusted":       "the live card's signature by {signer} does not verify, and that key is trusted for this agent: the card was changed after it was signed, or someone else signed it in that key's name",
	RuleSignerChanged:                       "the card is now signed by {after}, no longer by the pinned card's signer {before}: it may not be the same vendor any more",

	RuleSignatureRequired + "/unsigned":   "the live card is not signed, and signed cards are required",
	RuleSignatureRequired + "/unchecked":  "the live card's signatures were not checked, and signed cards are required",
	RuleSignatureRequired + "/invalid":    "the live card's signature by {signer} does not verify, and signed cards are required",
	RuleSignatureRequired + "/unverified": "no signature of the live card could be verified ({signer}), and signed cards are required",
	RuleSignatureRequired + "/untrusted":  "no signature of the live card verifies with a key trusted for this agent ({signer}: a key the signature's own jku names is the signer's claim, not trust), and signed cards are required",
}

// render returns the message for key with each {name} replaced by the value
// following name in kv; one with no value is left as it is.
func render(key string, kv ...string) string {
	tmpl, ok := messages[key]
	if !ok {
		return key
	}
	var b strings.Builder
	for {
		head, rest, open := strings.Cut(tmpl, "{")
		name, tail, closed := strings.Cut(rest, "}")
		if !open || !closed {
			break
		}
		b.WriteString(head)
		i := 0
		for i+1 < len(kv) && kv[i] != name {
			i += 2
		}
		if i+1 < len(kv) {
			b.WriteString(kv[i+1])
		} else {
			b.WriteString(tmpl[len(head) : len(tmpl)-len(tail)])
		}
		tmpl = tail
	}
	b.WriteString(tmpl)
	return b.String()
}

// maxQuoted is the longest text, in runes, a message quotes in full.
const maxQuoted = 60

func quote(s string) string { return strconv.Quote(s) }

// quoteText quotes descriptive text, shortened past maxQuoted runes.
func quoteText(s string) string {
	if utf8.RuneCountInString(s) > maxQuoted {
		r := []rune(s)
		s = string(r[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}

// quoteList quotes and comma-separates ss, or says "none".
func quoteList(ss []string) string { return joinQuoted(ss, quote) }

func quoteTextList(ss []string) string { return joinQuoted(ss, quoteText) }

func joinQuoted(ss []string, q func(string) string) string {
	if len(ss) == 0 {
		return "none"
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return strings.Join(out, ", ")
}

// versionList is quoteList of protocol versions, "" read "unspecified".
func versionList(vs []string) string {
	return joinQuoted(vs, func(v string) string {
		if v == "" {
			return "unspecified"
		}
		return quote(v)
	})
}
