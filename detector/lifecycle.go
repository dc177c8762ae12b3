package detector

import "strings"

// MethodKind classifies an A2A method name of any protocol version.
type MethodKind int

// Method kinds; a transition on MethodUnknown is capability-dependent.
const (
	MethodUnknown MethodKind = iota
	MethodSend
	MethodStream
	MethodGet
	MethodList
	MethodCancel
	MethodResubscribe
	MethodPushConfig
	MethodExtendedCard
)

var methodKinds = map[string]MethodKind{
	// v0.1
	"tasks/send":                 MethodSend,
	"tasks/sendSubscribe":        MethodStream,
	"tasks/get":                  MethodGet,
	"tasks/cancel":               MethodCancel,
	"tasks/resubscribe":          MethodResubscribe,
	"tasks/pushNotification/set": MethodPushConfig,
	"tasks/pushNotification/get": MethodPushConfig,
	// v0.2 / v0.3
	"message/send":                        MethodSend,
	"message/stream":                      MethodStream,
	"tasks/list":                          MethodList,
	"tasks/pushNotificationConfig/set":    MethodPushConfig,
	"tasks/pushNotificationConfig/get":    MethodPushConfig,
	"tasks/pushNotificationConfig/list":   MethodPushConfig,
	"tasks/pushNotificationConfig/delete": MethodPushConfig,
	"agent/getAuthenticatedExtendedCard":  MethodExtendedCard,
	// v1.0
	"SendMessage":                      MethodSend,
	"SendStreamingMessage":             MethodStream,
	"GetTask":                          MethodGet,
	"ListTasks":                        MethodList,
	"CancelTask":                       MethodCancel,
	"SubscribeToTask":                  MethodResubscribe,
	"CreateTaskPushNotificationConfig": MethodPushConfig,
	"SetTaskPushNotificationConfig":    MethodPushConfig,
	"GetTaskPushNotificationConfig":    MethodPushConfig,
	"ListTaskPushNotificationConfigs":  MethodPushConfig,
	"ListTaskPushNotificationConfig":   MethodPushConfig,
	"DeleteTaskPushNotificationConfig": MethodPushConfig,
	"GetExtendedAgentCard":             MethodExtendedCard,
}

// ClassifyMethod returns the kind of an A2A method name of any version.
func ClassifyMethod(method string) MethodKind {
	return methodKinds[method]
}

// IsCapabilityMethod reports whether a request on method depends on
// card-declared capabilities (an unknown method does).
func IsCapabilityMethod(method string) bool {
	switch ClassifyMethod(method) {
	case MethodStream, MethodResubscribe, MethodPushConfig, MethodExtendedCard, MethodUnknown:
		return true
	}
	return false
}

// State is a task state in the v0.3 spelling.
type State string

// Task states; v1.0 TASK_STATE_* names normalise onto them.
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateAuthRequired  State = "auth-required"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCanceled      State = "canceled"
	StateRejected      State = "rejected"
	StateUnknown       State = "unknown"
)

// NormalizeState maps a v0.3 or v1.0 state spelling onto State; ok is false
// (and the result StateUnknown) for a state carddrift does not model.
func NormalizeState(s string) (State, bool) {
	if strings.HasPrefix(s, "TASK_STATE_") {
		s = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s, "TASK_STATE_"), "_", "-"))
		if s == "unspecified" {
			return StateUnknown, true
		}
		if s == "cancelled" {
			s = "canceled"
		}
	}
	switch st := State(s); st {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired,
		StateCompleted, StateFailed, StateCanceled, StateRejected, StateUnknown:
		return st, true
	}
	return StateUnknown, false
}

// Terminal reports whether the state ends the task.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// IsCapabilityState reports whether a transition to state depends on
// card-declared fields: input-required, auth-required, and unmodeled states.
func IsCapabilityState(state string) bool {
	st, ok := NormalizeState(state)
	if !ok {
		return true
	}
	switch st {
	case StateInputRequired, StateAuthRequired, StateUnknown:
		return true
	}
	return false
}

// schemaClassCodes are the error codes that are symptoms of a card that no
// longer matches what the client planned against.
var schemaClassCodes = map[int]string{
	-32602: "InvalidParams",
	-32601: "MethodNotFound",
	-32003: "PushNotificationNotSupported",
	-32004: "UnsupportedOperation",
	-32005: "ContentTypeNotSupported",
	-32007: "ExtendedAgentCardNotConfigured",
	-32008: "ExtensionSupportRequired",
	-32009: "VersionNotSupported",
}

// IsSchemaClassError reports whether an error code is in the schema class,
// which forces revalidation before any retry is judged.
func IsSchemaClassError(code int) bool { return ErrorName(code) != "" }

// ErrorName returns the JSON-RPC/A2A name of a schema-class code, or "".
func ErrorName(code int) string { return schemaClassCodes[code] }
