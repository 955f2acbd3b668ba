package v4

import (
	"errors"
	"strings"
	"testing"
)

// Every bad field of a configuration is refused with its path.
func TestValidateAdmissionWebhook(t *testing.T) {
	const k8s = `{"kind":"MutatingWebhookConfiguration","metadata":{"name":"team"},"webhooks":[{"name":"label.hooks.example",` +
		`"clientConfig":{"url":"https://hooks.example:8443/label"},"rules":[{"operations":["CREATE","UPDATE"],"kinds":["apps","deploy*"]}],` +
		`"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["infra"]}]},` +
		`"objectSelector":{"matchLabels":{"inject":"true"}},"timeoutSeconds":10,"failurePolicy":"Fail","reinvocationPolicy":"IfNeeded",` +
		`"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	const bcs = `{"kind":"AdmissionWebhookConfiguration","metadata":{"name":"inject","namespace":"bcs-demo"},` +
		`"resourcesRef":{"operation":"Create","kind":"application"},"admissionWebhooks":[{"name":"inject","failurePolicy":"Ignore",` +
		`"clientConfig":{"url":"https://inject.example/app"},"namespaceSelector":{"operator":"In","values":["bcs-*"]}}]}`
	for _, good := range []string{k8s, bcs} {
		if _, err := DecodeAdmissionWebhook([]byte(good)); err != nil {
			t.Fatalf("%v\n%s", err, good)
		}
	}
	cases := []struct {
		name, doc, from, to, field string
	}{
		{"kind", k8s, `"MutatingWebhookConfiguration"`, `"Webhook"`, "kind"},
		{"name", k8s, `"name":"team"`, `"name":"Team_1"`, "metadata.name"},
		{"http", k8s, `https://hooks`, `http://hooks`, "webhooks[0].clientConfig.url"},
		{"user info", k8s, `https://hooks`, `https://u:p@hooks`, "webhooks[0].clientConfig.url"},
		{"no url", k8s, `"url":"https://hooks.example:8443/label"`, `"url":""`, "webhooks[0].clientConfig.url"},
		{"service", k8s, `"clientConfig":{`, `"clientConfig":{"service":{"name":"s"},`, "webhooks[0].clientConfig.service"},
		{"operation", k8s, `"UPDATE"`, `"PATCH"`, "webhooks[0].rules[0].operations[1]"},
		{"kind in rule", k8s, `"apps"`, `"rockets"`, "webhooks[0].rules[0].kinds[0]"},
		{"bad glob", k8s, `"deploy*"`, `"[x"`, "webhooks[0].rules[0].kinds[1]"},
		{"no rules", k8s, `"rules":[{"operations":["CREATE","UPDATE"],"kinds":["apps","deploy*"]}],`, ``, "webhooks[0].rules"},
		{"namespace label", k8s, `"kubernetes.io/metadata.name"`, `"team"`, "webhooks[0].namespaceSelector.matchExpressions[0].key"},
		{"selector operator", k8s, `"NotIn"`, `"Near"`, "webhooks[0].namespaceSelector.matchExpressions[0].operator"},
		{"timeout", k8s, `"timeoutSeconds":10`, `"timeoutSeconds":0`, "webhooks[0].timeoutSeconds"},
		{"policy", k8s, `"failurePolicy":"Fail"`, `"failurePolicy":"fail"`, "webhooks[0].failurePolicy"},
		{"reinvocation", k8s, `"IfNeeded"`, `"Always"`, "webhooks[0].reinvocationPolicy"},
		{"validating reinvoked", k8s, `"MutatingWebhookConfiguration"`, `"ValidatingWebhookConfiguration"`, "webhooks[0].reinvocationPolicy"},
		{"bcs operation", bcs, `"Create"`, `"Patch"`, "resourcesRef.operation"},
		{"bcs kind", bcs, `"kind":"application"`, `"kind":"taskgroup"`, "resourcesRef.kind"},
		{"bcs operator", bcs, `"operator":"In"`, `"operator":"Equals"`, "admissionWebhooks[0].namespaceSelector.operator"},
		{"bcs rules too", bcs, `"failurePolicy":"Ignore",`, `"failurePolicy":"Ignore","rules":[{"operations":["*"],"kinds":["*"]}],`, "admissionWebhooks[0].rules"},
		{"duplicate hook", bcs, `}]}`, `},{"name":"inject","clientConfig":{"url":"https://x.example"}}]}`, "admissionWebhooks[1].name"},
		{"caBundle", bcs, `"clientConfig":{`, `"clientConfig":{"caBundle":"bm90IGEgY2VydA==",`, "admissionWebhooks[0].clientConfig.caBundle"},
	}
	for _, c := range cases {
		doc := strings.Replace(c.doc, c.from, c.to, 1)
		if doc == c.doc {
			t.Fatalf("%s: %q is not in the document", c.name, c.from)
		}
		_, err := DecodeAdmissionWebhook([]byte(doc))
		var fe FieldErrors
		if !errors.As(err, &fe) || !hasField(fe, c.field) {
			t.Errorf("%s: %v, want %s", c.name, err, c.field)
		}
	}
	if _, err := DecodeAdmissionWebhook([]byte(strings.Replace(k8s, `"sideEffects"`, `"sideEffect"`, 1))); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func hasField(fe FieldErrors, field string) bool {
	for _, e := range fe {
		if e.Field == field {
			return true
		}
	}
	return false
}
