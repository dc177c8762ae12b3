package detector

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Fingerprint returns the card's skill fingerprint: "sha256:<hex>" of the RFC
// 8785 form of
//
//	{"pushNotifications": bool,
//	 "skills": [{"id": …, "inputModes": […], "outputModes": […]}, …],
//	 "streaming": bool}
//
// with skills sorted by id and each skill's effective modes (its own, else the
// card's defaults) sorted and de-duplicated as written. It changes exactly when
// what a planner negotiates against changes — a skill's identity or modes, or
// streaming or push support — whatever the card's version says.
func Fingerprint(c *Card) string {
	skills := make([]jcs.Value, 0, len(c.Skills))
	for _, s := range c.Skills {
		skills = append(skills, fpObject(
			fpMember("id", fpStr(s.ID)),
			fpMember("inputModes", fpStrings(fpSorted(c.InputModes(s)))),
			fpMember("outputModes", fpStrings(fpSorted(c.OutputModes(s)))),
		))
	}
	v := fpObject(
		fpMember("pushNotifications", fpBool(c.Capabilities.PushNotifications)),
		fpMember("skills", jcs.Value{Kind: jcs.Array, Elems: skills}),
		fpMember("streaming", fpBool(c.Capabilities.Streaming)),
	)
	return fpHash(&v)
}

// StructuralDigest returns "sha256:<hex>" over everything in the normalised
// card that can break a task, leaving out descriptive text (name, description,
// version, skill names, descriptions, examples and tags, provider,
// documentation and icon URLs, scheme and extension descriptions). Two cards
// with equal structural digests differ, if at all, only in what a reader sees.
// Because it is computed from the normalised model, a v0.3 card and its
// faithful v1.0 rewrite have the same structural digest.
func StructuralDigest(c *Card) string {
	ifaces := make([]jcs.Value, 0, len(c.Interfaces))
	for _, in := range c.Interfaces {
		ifaces = append(ifaces, fpObject(
			fpMember("protocolBinding", fpStr(in.ProtocolBinding)),
			fpMember("protocolVersion", fpStr(in.ProtocolVersion)),
			fpMember("tenant", fpStr(in.Tenant)),
			fpMember("url", fpStr(in.URL)),
		))
	}
	exts := make([]jcs.Value, 0, len(c.Capabilities.Extensions))
	for _, e := range c.Capabilities.Extensions {
		exts = append(exts, fpObject(
			fpMember("params", fpStr(e.Params)),
			fpMember("required", fpBool(e.Required)),
			fpMember("uri", fpStr(e.URI)),
		))
	}
	skills := make([]jcs.Value, 0, len(c.Skills))
	for _, s := range c.Skills {
		skills = append(skills, fpObject(
			fpMember("id", fpStr(s.ID)),
			fpMember("inputModes", fpStrings(fpSorted(c.InputModes(s)))),
			fpMember("outputModes", fpStrings(fpSorted(c.OutputModes(s)))),
			fpMember("securityRequirements", fpRequirements(s.SecurityRequirements)),
		))
	}
	names := make([]string, 0, len(c.SecuritySchemes))
	for name := range c.SecuritySchemes {
		names = append(names, name)
	}
	sort.Strings(names)
	schemes := make([]jcs.Member, 0, len(names))
	for _, name := range names {
		s := c.SecuritySchemes[name]
		flowNames := make([]string, 0, len(s.Flows))
		for f := range s.Flows {
			flowNames = append(flowNames, f)
		}
		sort.Strings(flowNames)
		flows := make([]jcs.Member, 0, len(flowNames))
		for _, fn := range flowNames {
			f := s.Flows[fn]
			scopes := make([]string, 0, len(f.Scopes))
			for sc := range f.Scopes {
				scopes = append(scopes, sc)
			}
			sort.Strings(scopes)
			flows = append(flows, fpMember(fn, fpObject(
				fpMember("authorizationUrl", fpStr(f.AuthorizationURL)),
				fpMember("deviceAuthorizationUrl", fpStr(f.DeviceAuthorizationURL)),
				fpMember("refreshUrl", fpStr(f.RefreshURL)),
				fpMember("scopes", fpStrings(scopes)),
				fpMember("tokenUrl", fpStr(f.TokenURL)),
			)))
		}
		schemes = append(schemes, fpMember(name, fpObject(
			fpMember("bearerFormat", fpStr(s.BearerFormat)),
			fpMember("flows", jcs.Value{Kind: jcs.Object, Members: flows}),
			fpMember("location", fpStr(s.Location)),
			fpMember("name", fpStr(s.Name)),
			fpMember("oauth2MetadataUrl", fpStr(s.OAuth2MetadataURL)),
			fpMember("openIdConnectUrl", fpStr(s.OpenIDConnectURL)),
			fpMember("scheme", fpStr(s.Scheme)),
			fpMember("type", fpStr(s.Type)),
		)))
	}
	v := fpObject(
		fpMember("capabilities", fpObject(
			fpMember("extendedAgentCard", fpBool(c.Capabilities.ExtendedAgentCard)),
			fpMember("extensions", jcs.Value{Kind: jcs.Array, Elems: exts}),
			fpMember("pushNotifications", fpBool(c.Capabilities.PushNotifications)),
			fpMember("stateTransitionHistory", fpBool(c.Capabilities.StateTransitionHistory)),
			fpMember("streaming", fpBool(c.Capabilities.Streaming)),
		)),
		fpMember("defaultInputModes", fpStrings(fpSorted(c.DefaultInputModes))),
		fpMember("defaultOutputModes", fpStrings(fpSorted(c.DefaultOutputModes))),
		fpMember("interfaces", jcs.Value{Kind: jcs.Array, Elems: ifaces}),
		fpMember("securityRequirements", fpRequirements(c.SecurityRequirements)),
		fpMember("securitySchemes", jcs.Value{Kind: jcs.Object, Members: schemes}),
		fpMember("skills", jcs.Value{Kind: jcs.Array, Elems: skills}),
	)
	return fpHash(&v)
}

func fpRequirements(reqs []SecurityRequirement) jcs.Value {
	out := make([]jcs.Value, 0, len(reqs))
	for _, r := range reqs {
		names := make([]string, 0, len(r))
		for n := range r {
			names = append(names, n)
		}
		sort.Strings(names)
		ms := make([]jcs.Member, 0, len(names))
		for _, n := range names {
			ms = append(ms, fpMember(n, fpStrings(fpSorted(r[n]))))
		}
		out = append(out, jcs.Value{Kind: jcs.Object, Members: ms})
	}
	return jcs.Value{Kind: jcs.Array, Elems: out}
}

func fpHash(v *jcs.Value) string {
	sum := sha256.Sum256(jcs.Append(nil, v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func fpObject(ms ...jcs.Member) jcs.Value { return jcs.Value{Kind: jcs.Object, Members: ms} }

func fpMember(k string, v jcs.Value) jcs.Member { return jcs.Member{Key: k, Value: v} }

func fpStr(s string) jcs.Value { return jcs.Value{Kind: jcs.String, Str: s} }

func fpBool(b bool) jcs.Value {
	if b {
		return jcs.Value{Kind: jcs.True}
	}
	return jcs.Value{Kind: jcs.False}
}

func fpStrings(ss []string) jcs.Value {
	out := make([]jcs.Value, len(ss))
	for i, s := range ss {
		out[i] = fpStr(s)
	}
	return jcs.Value{Kind: jcs.Array, Elems: out}
}

// sortedSet returns a sorted copy of ss without duplicates.
func fpSorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i > 0 && s == out[n-1] {
			continue
		}
		out[n] = s
		n++
	}
	return out[:n]
}
