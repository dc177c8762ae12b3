package detector

import "slices"

// Rule ids: part of the public contract; never rename one.
const (
	RuleSkillRemoved              = "skill-removed"
	RuleSkillAdded                = "skill-added"
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
	RuleCardNonconformant            = "card-nonconformant"

	// Task-level rules: emitted by the task checks (CheckInputRequest,
	// CheckArtifact, CheckRetry, EvaluateUnknown, CheckSigned,
	// CheckReplicas), never by Diff.
	RuleUnmodeledSkill         = "unmodeled-skill"
	RuleArtifactTypeUndeclared = "artifact-type-undeclared"
	RuleBlindRetry             = "blind-retry"
	RulePinnedCardUnknown      = "pinned-card-unknown"
	RuleSignatureRequired      = "signature-required"
	RuleReplicasDisagree       = "replicas-disagree"

	RuleSignatureAdded   = "signature-added"
	RuleSignatureRemoved = "signature-removed"
	RuleSignatureInvalid = "signature-invalid"
	RuleSignerChanged    = "signer-changed"
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

// Rule is one kind of finding. Severity is the most serious it produces
// (some rules grade each finding by direction: their checks say how).
type Rule struct {
	ID        string
	Severity  Severity
	Area      string
	TaskLevel bool  // emitted from task lifecycle facts; Check is nil
	Touches   Touch // which tasks the rule's findings concern
	// Check returns the rule's findings between two cards, complete with
	// Rule, Severity and Message; pure and deterministic.
	Check func(pinned, live *Card) []Finding
}

// registry is the rule set by area, removal before addition.
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

// Rules returns a copy of every rule, in the registry's order.
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
