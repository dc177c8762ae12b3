package detector

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Fingerprint returns the card's skill fingerprint: "sha256:<hex>" of the RFC
// 8785 form of
//
//	{"pushNotifications": bool,
//	 "skills": [{"id": …, "inputModes": […], "outputModes": […]}, …],
//	 "streaming": bool}
//
// with skills sorted by id and each skill's effective modes sorted and
// de-duplicated as written.
func Fingerprint(c *Card) string {
	v := fpObject(
		fpMember("pushNotifications", jcs.Bool(c.Capabilities.PushNotifications)),
		fpMember("skills", fpArray(c.Skills, func(s Skill) jcs.Value { return fpSkill(c, s) })),
		fpMember("streaming", jcs.Bool(c.Capabilities.Streaming)),
	)
	return fpHash(&v)
}

// StructuralDigest returns "sha256:<hex>" over everything in the normalised
// card that can break a task: all but descriptive text (the fields
// checkDescriptiveText compares, and the version). A v0.3 card and its
// faithful v1.0 rewrite have the same structural digest.
func StructuralDigest(c *Card) string {
	v := fpObject(
		fpMember("capabilities", fpObject(
			fpMember("extendedAgentCard", jcs.Bool(c.Capabilities.ExtendedAgentCard)),
			fpMember("extensions", fpArray(c.Capabilities.Extensions, func(e Extension) jcs.Value {
				return fpObject(
					fpMember("params", jcs.Str(e.Params)),
					fpMember("required", jcs.Bool(e.Required)),
					fpMember("uri", jcs.Str(e.URI)),
				)
			})),
			fpMember("pushNotifications", jcs.Bool(c.Capabilities.PushNotifications)),
			fpMember("stateTransitionHistory", jcs.Bool(c.Capabilities.StateTransitionHistory)),
			fpMember("streaming", jcs.Bool(c.Capabilities.Streaming)),
		)),
		fpMember("defaultInputModes", fpStrings(fpSorted(c.DefaultInputModes))),
		fpMember("defaultOutputModes", fpStrings(fpSorted(c.DefaultOutputModes))),
		fpMember("interfaces", fpArray(c.Interfaces, func(in Interface) jcs.Value {
			return fpObject(
				fpMember("protocolBinding", jcs.Str(in.ProtocolBinding)),
				fpMember("protocolVersion", jcs.Str(in.ProtocolVersion)),
				fpMember("tenant", jcs.Str(in.Tenant)),
				fpMember("url", jcs.Str(in.URL)),
			)
		})),
		fpMember("securityRequirements", fpRequirements(c.SecurityRequirements)),
		fpMember("securitySchemes", fpMap(c.SecuritySchemes, fpScheme)),
		fpMember("skills", fpArray(c.Skills, func(s Skill) jcs.Value {
			return fpSkill(c, s, fpMember("securityRequirements", fpRequirements(s.SecurityRequirements)))
		})),
	)
	return fpHash(&v)
}

// fpSkill is a skill's id and effective modes, and the members in more.
func fpSkill(c *Card, s Skill, more ...jcs.Member) jcs.Value {
	return fpObject(append([]jcs.Member{
		fpMember("id", jcs.Str(s.ID)),
		fpMember("inputModes", fpStrings(fpSorted(c.InputModes(s)))),
		fpMember("outputModes", fpStrings(fpSorted(c.OutputModes(s)))),
	}, more...)...)
}

func fpScheme(s SecurityScheme) jcs.Value {
	return fpObject(
		fpMember("bearerFormat", jcs.Str(s.BearerFormat)),
		fpMember("flows", fpMap(s.Flows, func(f OAuthFlow) jcs.Value {
			return fpObject(
				fpMember("authorizationUrl", jcs.Str(f.AuthorizationURL)),
				fpMember("deviceAuthorizationUrl", jcs.Str(f.DeviceAuthorizationURL)),
				fpMember("refreshUrl", jcs.Str(f.RefreshURL)),
				fpMember("scopes", fpStrings(sortedKeys(f.Scopes))),
				fpMember("tokenUrl", jcs.Str(f.TokenURL)),
			)
		})),
		fpMember("location", jcs.Str(s.Location)),
		fpMember("name", jcs.Str(s.Name)),
		fpMember("oauth2MetadataUrl", jcs.Str(s.OAuth2MetadataURL)),
		fpMember("openIdConnectUrl", jcs.Str(s.OpenIDConnectURL)),
		fpMember("scheme", jcs.Str(s.Scheme)),
		fpMember("type", jcs.Str(s.Type)),
	)
}

func fpRequirements(reqs []SecurityRequirement) jcs.Value {
	return fpArray(reqs, func(r SecurityRequirement) jcs.Value {
		return fpMap(r, func(scopes []string) jcs.Value { return fpStrings(fpSorted(scopes)) })
	})
}

func fpHash(v *jcs.Value) string {
	sum := sha256.Sum256(jcs.Append(nil, v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func fpObject(ms ...jcs.Member) jcs.Value { return jcs.Value{Kind: jcs.Object, Members: ms} }

func fpMember(k string, v jcs.Value) jcs.Member { return jcs.Member{Key: k, Value: v} }

func fpStrings(ss []string) jcs.Value { return fpArray(ss, jcs.Str) }

func fpArray[T any](xs []T, fn func(T) jcs.Value) jcs.Value {
	out := make([]jcs.Value, len(xs))
	for i, x := range xs {
		out[i] = fn(x)
	}
	return jcs.Value{Kind: jcs.Array, Elems: out}
}

// fpMap is an object of fn of m's values, in no order (jcs.Append sorts).
func fpMap[V any](m map[string]V, fn func(V) jcs.Value) jcs.Value {
	ms := make([]jcs.Member, 0, len(m))
	for k, v := range m {
		ms = append(ms, fpMember(k, fn(v)))
	}
	return fpObject(ms...)
}

func fpSorted(ss []string) []string { return slices.Compact(slices.Sorted(slices.Values(ss))) }
