package v4

import "testing"

// FuzzDecodeAdmissionWebhook: a configuration never panics the decoder or the
// validation, and one that is accepted has hooks with https URLs.
func FuzzDecodeAdmissionWebhook(f *testing.F) {
	for _, s := range []string{
		`{"kind":"admissionwebhook","metadata":{"name":"a"},"webhooks":[{"name":"h.x","clientConfig":{"url":"https://h:8443/m"},"rules":[{"operations":["CREATE"],"kinds":["*"]}]}]}`,
		`{"kind":"AdmissionWebhookConfiguration","metadata":{"name":"b","namespace":"ns"},"resourcesRef":{"operation":"Create","kind":"application"},` +
			`"admissionWebhooks":[{"name":"inject","failurePolicy":"Ignore","clientConfig":{"url":"https://h/i"},"namespaceSelector":{"operator":"NotIn","values":["kube-*"]}}]}`,
		`{"kind":"ValidatingWebhookConfiguration","metadata":{"name":"c"},"webhooks":[{"name":"v","timeoutSeconds":31,"clientConfig":{"url":"http://h"},"rules":[]}]}`,
		`{"kind":"MutatingWebhookConfiguration","metadata":{"name":"d"},"webhooks":[{"name":"m","clientConfig":{"url":"https://h","caBundle":"bm90IHBlbQ=="},` +
			`"objectSelector":{"matchExpressions":[{"key":"a","operator":"Exists"}]},"rules":[{"operations":["*"],"resources":["deployments/*"]}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeAdmissionWebhook(data)
		if err != nil {
			return
		}
		for _, h := range c.Hooks() {
			if len(h.ClientConfig.URL) < 8 || h.ClientConfig.URL[:8] != "https://" {
				t.Fatalf("accepted %q", h.ClientConfig.URL)
			}
			_ = c.HookType(&h)
		}
	})
}
