package events

import (
	"math"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/schemas"
)

// readData reads the data of an event of type typ into its Go type with r,
// which checks it against the schema as it goes: Decode's one pass over
// the data. Members the type does not hold are checked all the same; what
// the schema accepts and Go cannot hold (an integer beyond the field's
// range, a leap second) is a violation of the field.
func readData(r *schemas.Reader, typ string) Data {
	switch typ {
	case TypeSubmitted:
		return readSubmitted(r)
	case TypeRequest:
		var d Request
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "taskId":
				d.TaskID = r.String()
			case "agentUrl":
				d.AgentURL = r.String()
			case "method":
				d.Method = r.String()
			case "attempt":
				d.Attempt = readInt32(r)
			}
		}
		return d
	case TypeStatus:
		var d Status
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "taskId":
				d.TaskID = r.String()
			case "agentUrl":
				d.AgentURL = r.String()
			case "state":
				d.State = r.String()
			case "skillId":
				d.SkillID = r.String()
			}
		}
		return d
	case TypeArtifact:
		var d Artifact
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "taskId":
				d.TaskID = r.String()
			case "agentUrl":
				d.AgentURL = r.String()
			case "artifactId":
				d.ArtifactID = r.String()
			case "mediaTypes":
				d.MediaTypes = r.Strings()
			}
		}
		return d
	case TypeError:
		var d Error
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "taskId":
				d.TaskID = r.String()
			case "agentUrl":
				d.AgentURL = r.String()
			case "method":
				d.Method = r.String()
			case "code":
				d.Code = readInt32(r)
			case "message":
				d.Message = r.String()
			}
		}
		return d
	case TypeDrift:
		return readDrift(r)
	case TypePinned:
		return readPinned(r)
	case TypeObserved:
		var d Observed
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "agentUrl":
				d.AgentURL = r.String()
			case "cardUrl":
				d.CardURL = r.String()
			case "digest":
				d.Digest = r.String()
			case "status":
				d.Status = readInt32(r)
			case "etag":
				d.ETag = r.String()
			case "fetchedAt":
				d.FetchedAt = r.Time()
			case "latencyMs":
				d.LatencyMs = r.Int(math.MinInt64, math.MaxInt64)
			case "fetches":
				d.Fetches = readInt32(r)
			case "since":
				d.Since = r.Time()
			}
		}
		return d
	case TypeUnreachable:
		var d Unreachable
		for o := r.Object(); o.Next(); {
			switch o.Key() {
			case "agentUrl":
				d.AgentURL = r.String()
			case "cardUrl":
				d.CardURL = r.String()
			case "reason":
				d.Reason = r.String()
			case "detail":
				d.Detail = r.String()
			case "taskId":
				d.TaskID = r.String()
			case "attemptedAt":
				d.AttemptedAt = r.Time()
			case "trigger":
				d.Trigger = readTrigger(r)
			}
		}
		return d
	case TypeInconsistent:
		return readInconsistent(r)
	}
	if r.Skip(); !r.Failed() {
		r.Violate("no Go type for this event type")
	}
	return nil
}

func readInt32(r *schemas.Reader) int { return int(r.Int(math.MinInt32, math.MaxInt32)) }

// readSubmitted reads a2a.task.submitted data. Absent requires, posture
// and idempotent take their defaults: nothing required, fail-closed, not
// idempotent. The card is kept as the bytes the client sent.
func readSubmitted(r *schemas.Reader) Submitted {
	d := Submitted{Posture: detector.FailClosed}
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "taskId":
			d.TaskID = r.String()
		case "agentUrl":
			d.AgentURL = r.String()
		case "skillId":
			d.SkillID = r.String()
		case "requires":
			d.Requires = readRequires(r)
		case "posture":
			d.Posture = detector.Posture(r.String())
		case "idempotent":
			d.Idempotent = r.Bool()
		case "card":
			d.Card = r.Raw()
		case "cardDigest":
			d.CardDigest = r.String()
		case "cardUrl":
			d.CardURL = r.String()
		}
	}
	return d
}

func readRequires(r *schemas.Reader) Requires {
	var q Requires
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "streaming":
			q.Streaming = r.Bool()
		case "pushNotifications":
			q.PushNotifications = r.Bool()
		case "inputModes":
			q.InputModes = r.Strings()
		case "outputModes":
			q.OutputModes = r.Strings()
		case "security":
			q.Security = r.Strings()
		case "scopes":
			q.Scopes = map[string][]string{}
			for s := r.Object(); s.Next(); {
				q.Scopes[s.KeepKey()] = r.Strings()
			}
		case "extensions":
			q.Extensions = r.Strings()
		case "extendedCard":
			q.ExtendedCard = r.Bool()
		}
	}
	return q
}

func readTrigger(r *schemas.Reader) Trigger {
	var t Trigger
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "eventId":
			t.EventID = r.String()
		case "type":
			t.Type = r.String()
		case "source":
			t.Source = r.String()
		}
	}
	return t
}

func readSigner(r *schemas.Reader) *detector.Signature {
	s := &detector.Signature{}
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "kid":
			s.KeyID = r.String()
		case "alg":
			s.Alg = r.String()
		case "jku":
			s.JKU = r.String()
		case "thumbprint":
			s.Thumbprint = r.String()
		case "source":
			s.Source = r.String()
		case "verified":
			s.Verified = r.Bool()
		case "reason":
			s.Reason = r.String()
		}
	}
	return s
}

func readCardRef(r *schemas.Reader) CardRef {
	var c CardRef
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "digest":
			c.Digest = r.String()
		case "fingerprint":
			c.Fingerprint = r.String()
		case "etag":
			c.ETag = r.String()
		case "fetchedAt":
			c.FetchedAt = r.Time()
		case "signer":
			c.Signer = readSigner(r)
		}
	}
	return c
}

func readPinned(r *schemas.Reader) Pinned {
	var d Pinned
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "taskId":
			d.TaskID = r.String()
		case "agentUrl":
			d.AgentURL = r.String()
		case "cardUrl":
			d.CardURL = r.String()
		case "digest":
			d.Digest = r.String()
		case "fingerprint":
			d.Fingerprint = r.String()
		case "source":
			d.Source = r.String()
		case "trigger":
			d.Trigger = readTrigger(r)
		case "signer":
			d.Signer = readSigner(r)
		case "extended":
			d.Extended = r.String()
		}
	}
	return d
}

// readDrift reads card.drift data. TouchesKnown says that every finding
// had touches (events written before contract v1.1 did not).
func readDrift(r *schemas.Reader) Drift {
	d := Drift{TouchesKnown: true}
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "taskId":
			d.TaskID = r.String()
		case "agentUrl":
			d.AgentURL = r.String()
		case "cardUrl":
			d.CardURL = r.String()
		case "pinned":
			d.Pinned = readCardRef(r)
		case "live":
			d.Live = readCardRef(r)
		case "findings":
			d.Findings = []detector.Finding{}
			for a := r.Array(); a.Next(); {
				f, touches := readFinding(r)
				d.Findings = append(d.Findings, f)
				d.TouchesKnown = d.TouchesKnown && touches
			}
		case "verdict":
			for v := r.Object(); v.Next(); {
				switch v.Key() {
				case "action":
					d.Verdict.Action = detector.Action(r.String())
				case "posture":
					d.Verdict.Posture = detector.Posture(r.String())
				case "reason":
					d.Verdict.Reason = r.String()
				case "replanSkill":
					d.Verdict.ReplanSkill = r.String()
				}
			}
		case "trigger":
			d.Trigger = readTrigger(r)
		}
	}
	return d
}

// readFinding reads one finding and whether it had touches.
func readFinding(r *schemas.Reader) (detector.Finding, bool) {
	var f detector.Finding
	touches := false
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "rule":
			f.Rule = r.String()
		case "severity":
			sev, err := detector.ParseSeverity(r.String())
			if err != nil {
				r.Violate(err.Error())
			}
			f.Severity = sev
		case "path":
			f.Path = r.String()
		case "before":
			f.Before = r.Any()
		case "after":
			f.After = r.Any()
		case "message":
			f.Message = r.String()
		case "skill":
			f.Skill = r.String()
		case "scheme":
			f.Scheme = r.String()
		case "scope":
			f.Scope = r.String()
		case "extension":
			f.Extension = r.String()
		case "touches":
			f.Touches, touches = r.Bool(), true
		}
	}
	return f, touches
}

func readInconsistent(r *schemas.Reader) Inconsistent {
	var d Inconsistent
	for o := r.Object(); o.Next(); {
		switch o.Key() {
		case "agentUrl":
			d.AgentURL = r.String()
		case "cardUrl":
			d.CardURL = r.String()
		case "digests":
			d.Digests = []DigestSeen{}
			for a := r.Array(); a.Next(); {
				var s DigestSeen
				for so := r.Object(); so.Next(); {
					switch so.Key() {
					case "digest":
						s.Digest = r.String()
					case "count":
						s.Count = readInt32(r)
					case "firstSeen":
						s.FirstSeen = r.Time()
					case "lastSeen":
						s.LastSeen = r.Time()
					}
				}
				d.Digests = append(d.Digests, s)
			}
		case "window":
			s := r.String()
			if v, err := time.ParseDuration(s); err == nil {
				d.Window = Duration(v)
			} else {
				r.Violate("not a duration: " + s)
			}
		}
	}
	return d
}
