package detector

import "slices"

// Rule ids. They are part of the public contract (card.drift findings carry
// them): never rename one, add a new id instead.
const (
	RuleSkillRemoved = "skill-removed"
	RuleSkillAdded   = "skill-added"
	// RuleSkillRenamed: a pinned skill's id is gone and exactly one new id
	// offers the same contract (check_skill_renamed.go). Since contract v1.2.
	RuleSkillRenamed              = "skill-renamed"
	RuleSkillInputModesChanged    = "skill-input-modes-changed"
	RuleSkillOutputModesChanged   = "skill-output-modes-changed"
	RuleDefaultInputModesChanged  = "default-input-modes-changed"
	RuleDefaultOutputModesChanged = "default-output-modes-changed"

	RuleStreamingDisabled         = "streaming-disabled"
	RuleStreamingEnabled          = "streaming-enabled"
	RulePushNotificationsDisabled = "push-notifications-disabled"
	RulePushNotificationsEnabled  = "push-notifications-enabled"
	RuleExtendedCardChanged       = "extended-card-changed"

	RuleSecuritySchemeAdded          = "security-scheme-added"
	RuleSecuritySchemeRemoved        = "security-scheme-removed"
	RuleSecuritySchemeChanged        = "security-scheme-changed"
	RuleOAuthScopeRemoved            = "oauth-scope-removed"
	RuleSecurityRequirementsChanged  = "security-requirements-changed"
	RuleProtocolVersionChanged       = "protocol-version-changed"
	RuleInterfaceChanged             = "interface-changed"
	RuleExtensionRemoved             = "extension-removed"
	RuleExtensionAdded               = "extension-added"
	RuleExtensionRequiredAdded       = "extension-required-added"
	RuleExtensionRequiredRemoved     = "extension-required-removed"
	RuleExtensionParamsChanged       = "extension-params-changed"
	RuleCardVersionChanged           = "card-version-changed"
	RuleContentChangedWithoutVersion = "content-changed-without-version-bump"
	RuleDescriptiveTextChanged       = "descriptive-text-changed"
	// RuleCardNonconformant reports a part of the live card that follows no
	// known version's schema (and that the pinned card did not already have).
	RuleCardNonconformant = "card-nonconformant"

	// Task-level rules: they compare a task's lifecycle events with its pin,
	// not two cards, and are emitted by the task checks, not by Diff.
	RuleUnmodeledSkill         = "unmodeled-skill"
	RuleArtifactTypeUndeclared = "artifact-type-undeclared"
	RuleBlindRetry             = "blind-retry"
	// RulePinnedCardUnknown: the task was pinned by a digest whose body
	// carddrift never saw, and the live card has another digest: it is drift,
	// but what changed cannot be listed.
	RulePinnedCardUnknown = "pinned-card-unknown"

	// Signature rules: who signed the pinned card and who signs the live one
	// (Card.Signatures; see check_signatures.go).
	RuleSignatureAdded   = "signature-added"
	RuleSignatureRemoved = "signature-removed"
	RuleSignatureInvalid = "signature-invalid"
	RuleSignerChanged    = "signer-changed"
	// RuleSignatureRequired is the posture for signed fleets (CheckSigned):
	// no signature of the live card verifies, and the deployment requires
	// one. Task-level: the shell adds it, Diff never does.
	RuleSignatureRequired = "signature-required"
	// RuleReplicasDisagree: replicas behind the agent's URL serve different
	// cards at once (split brain; CheckReplicas). Task-level: the shell
	// adds it from the agent's recent observations while the episode lasts.
	RuleReplicasDisagree = "replicas-disagree"
)

// Areas group rules by the part of the card they look at.
const (
	AreaSkills       = "skills"
	AreaModes        = "modes"
	AreaCapabilities = "capabilities"
	AreaExtensions   = "extensions"
	AreaSecurity     = "security"
	AreaInterfaces   = "interfaces"
	AreaVersion      = "version"
	AreaText         = "text"
	AreaConformance  = "conformance"
	AreaSignatures   = "signatures"
	AreaTask         = "task"
)

// Rule is one kind of finding. Severity is the most serious severity the rule
// can produce; the mode, extended-card, security-requirements, interface and
// protocol-version rules grade each finding by direction (their checks say
// how). Added/removed and enabled/disabled pairs are separate rules, and the
// registry audit requires each to have its mirror or a written waiver.
// Touches declares which tasks the rule's findings concern (see Touch).
type Rule struct {
	ID       string
	Severity Severity
	Area     string
	// TaskLevel marks a rule emitted from task lifecycle facts (see the task
	// checks) rather than by comparing two cards; its Check is nil.
	TaskLevel bool
	// Touches is the one decision Touches (and so Judge) applies to the rule's
	// findings.
	Touches Touch
	// Check returns this rule's findings between a pinned and a live card,
	// complete with Rule, Severity and Message; pure and deterministic.
	Check func(pinned, live *Card) []Finding
}

// registry is the rule set in its fixed order: by area, then removal before
// addition. Diff output is sorted independently of it.
var registry = []Rule{
	{ID: RuleSkillRemoved, Severity: Breaking, Area: AreaSkills, Touches: TouchSkill, Check: checkSkillRemoved},
	{ID: RuleSkillAdded, Severity: Info, Area: AreaSkills, Touches: TouchNone, Check: checkSkillAdded},
	{ID: RuleSkillRenamed, Severity: Breaking, Area: AreaSkills, Touches: TouchSkill, Check: checkSkillRenamed},
	{ID: RuleSkillInputModesChanged, Severity: Breaking, Area: AreaModes, Touches: TouchInputModes, Check: checkSkillInputModes},
	{ID: RuleSkillOutputModesChanged, Severity: Breaking, Area: AreaModes, Touches: TouchOutputModes, Check: checkSkillOutputModes},
	{ID: RuleDefaultInputModesChanged, Severity: Breaking, Area: AreaModes, Touches: TouchDefaultInputModes, Check: checkDefaultInputModes},
	{ID: RuleDefaultOutputModesChanged, Severity: Breaking, Area: AreaModes, Touches: TouchDefaultOutputModes, Check: checkDefaultOutputModes},

	{ID: RuleStreamingDisabled, Severity: Breaking, Area: AreaCapabilities, Touches: TouchStreaming, Check: checkStreamingDisabled},
	{ID: RuleStreamingEnabled, Severity: Info, Area: AreaCapabilities, Touches: TouchNone, Check: checkStreamingEnabled},
	{ID: RulePushNotificationsDisabled, Severity: Breaking, Area: AreaCapabilities, Touches: TouchPush, Check: checkPushDisabled},
	{ID: RulePushNotificationsEnabled, Severity: Info, Area: AreaCapabilities, Touches: TouchNone, Check: checkPushEnabled},
	{ID: RuleExtendedCardChanged, Severity: Breaking, Area: AreaCapabilities, Touches: TouchExtendedCard, Check: checkExtendedCard},

	{ID: RuleExtensionRemoved, Severity: Breaking, Area: AreaExtensions, Touches: TouchExtension, Check: checkExtensionRemoved},
	{ID: RuleExtensionAdded, Severity: Info, Area: AreaExtensions, Touches: TouchExtension, Check: checkExtensionAdded},
	{ID: RuleExtensionRequiredAdded, Severity: Breaking, Area: AreaExtensions, Touches: TouchExtensionRequired, Check: checkExtensionRequiredAdded},
	{ID: RuleExtensionRequiredRemoved, Severity: Info, Area: AreaExtensions, Touches: TouchExtension, Check: checkExtensionRequiredRemoved},
	{ID: RuleExtensionParamsChanged, Severity: Warning, Area: AreaExtensions, Touches: TouchExtension, Check: checkExtensionParams},

	{ID: RuleSecuritySchemeRemoved, Severity: Breaking, Area: AreaSecurity, Touches: TouchScheme, Check: checkSecuritySchemeRemoved},
	{ID: RuleSecuritySchemeAdded, Severity: Info, Area: AreaSecurity, Touches: TouchNone, Check: checkSecuritySchemeAdded},
	{ID: RuleSecuritySchemeChanged, Severity: Breaking, Area: AreaSecurity, Touches: TouchScheme, Check: checkSecuritySchemeChanged},
	{ID: RuleOAuthScopeRemoved, Severity: Breaking, Area: AreaSecurity, Touches: TouchScope, Check: checkOAuthScopeRemoved},
	{ID: RuleSecurityRequirementsChanged, Severity: Breaking, Area: AreaSecurity, Touches: TouchRequirements, Check: checkSecurityRequirements},

	{ID: RuleInterfaceChanged, Severity: Breaking, Area: AreaInterfaces, Touches: TouchAll, Check: checkInterfaces},
	{ID: RuleProtocolVersionChanged, Severity: Breaking, Area: AreaInterfaces, Touches: TouchAll, Check: checkProtocolVersion},

	{ID: RuleCardVersionChanged, Severity: Info, Area: AreaVersion, Touches: TouchNone, Check: checkCardVersion},
	{ID: RuleContentChangedWithoutVersion, Severity: Warning, Area: AreaVersion, Touches: TouchNone, Check: checkVersionBump},
	{ID: RuleDescriptiveTextChanged, Severity: Info, Area: AreaText, Touches: TouchNone, Check: checkDescriptiveText},
	{ID: RuleCardNonconformant, Severity: Warning, Area: AreaConformance, Touches: TouchNone, Check: checkNonconformant},

	{ID: RuleSignatureRemoved, Severity: Warning, Area: AreaSignatures, Touches: TouchAll, Check: checkSignatureRemoved},
	{ID: RuleSignatureAdded, Severity: Info, Area: AreaSignatures, Touches: TouchAll, Check: checkSignatureAdded},
	{ID: RuleSignatureInvalid, Severity: Breaking, Area: AreaSignatures, Touches: TouchAll, Check: checkSignatureInvalid},
	{ID: RuleSignerChanged, Severity: Warning, Area: AreaSignatures, Touches: TouchAll, Check: checkSignerChanged},

	{ID: RuleUnmodeledSkill, Severity: Breaking, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
	{ID: RuleArtifactTypeUndeclared, Severity: Breaking, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
	{ID: RuleBlindRetry, Severity: Breaking, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
	{ID: RulePinnedCardUnknown, Severity: Breaking, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
	{ID: RuleSignatureRequired, Severity: Breaking, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
	{ID: RuleReplicasDisagree, Severity: Warning, Area: AreaTask, TaskLevel: true, Touches: TouchAll},
}

// Rules returns every rule, card-level and task-level, in the registry's fixed
// order. The slice is a copy: changing it does not change Diff.
func Rules() []Rule {
	return slices.Clone(registry)
}

// RuleByID returns the rule with the given id.
func RuleByID(id string) (Rule, bool) {
	for _, r := range registry {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
