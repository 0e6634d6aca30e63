package apiclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// FuzzStaticExport decodes fuzzed answers of the three static export
// calls: never a panic, never the key in an error, never a bundle's URL in
// an error, and what a success hands back is bounded (a printable status
// of at most 64 bytes and an ellipsis, progress within 0-100, no negative
// count, a job id CheckID accepts).
func FuzzStaticExport(f *testing.F) {
	f.Add([]byte(`{"jobId":"se_1","status":"running","progress":42.5,"pageCount":128,"createdAt":"2026-08-21T10:00:00Z","updatedAt":"2026-08-21T10:00:00Z"}`), uint16(0))
	f.Add([]byte(`{"jobId":"se_1","status":"failed","progress":-3,"pageCount":1e300,"error":null}`), uint16(0))
	f.Add([]byte(`{"jobId":"se_1","status":"a\u0000b","error":"x\ny"}`), uint16(0))
	f.Add([]byte(`{"jobId":"se_1","bundleUrl":"https://s3.example/b?X-Amz-Signature=0123456789abcdef","sizeBytes":1.5,"expiresAt":"2026-08-21T11:00:00Z"}`), uint16(0))
	f.Add([]byte(`{"bundleUrl":"https://s3.example/b?sig=0123456789abcdef","expiresAt":"https://s3.example/b?sig=0123456789abcdef"}`), uint16(0))
	f.Add([]byte(`{"error":"see https://s3.example/b?sig=0123456789abcdef mint_test_key_0123"}`), uint16(2))
	f.Add([]byte(`<a href="https://s3.example/b?sig=0123456789abcdef">`), uint16(6))
	f.Fuzz(func(t *testing.T, body []byte, status uint16) {
		c := fuzzClient(t, bodyTransport{status: fuzzStatus(status), body: body})
		ctx := context.Background()
		var url struct {
			BundleURL any `json:"bundleUrl"`
		}
		_ = json.Unmarshal(body, &url)
		secret, _ := url.BundleURL.(string)
		check := func(what string, err error) {
			if err == nil {
				return
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("%s: error leaks the key: %v", what, err)
			}
			// Only the bundle's answers hold a secret.
			if what == "bundle" && strings.Contains(secret, "://") && len(secret) >= 12 && strings.Contains(err.Error(), secret) {
				t.Fatalf("%s: error leaks the bundle URL: %v", what, err)
			}
		}
		bounded := func(what string, j apiclient.StaticExportJob) {
			if j.Progress < 0 || j.Progress > 100 || j.PageCount < 0 || len(j.Status) > 64+len("…") || len(j.Error) > 512+len("…") ||
				strings.ContainsFunc(j.Status+j.Error, func(r rune) bool { return !unicode.IsPrint(r) }) {
				t.Fatalf("%s: unbounded %+v", what, j)
			}
			if j.JobID != "" && apiclient.CheckID("id", j.JobID) != nil {
				t.Fatalf("%s: job id %q", what, j.JobID)
			}
		}
		j, err := c.GetStaticExport(ctx, "se_1")
		check("status", err)
		if err == nil {
			bounded("status", j)
		}
		j, err = c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com"})
		check("start", err)
		if err == nil {
			bounded("start", j)
		}
		b, err := c.BundleStaticExport(ctx, "se_1")
		check("bundle", err)
		if err == nil && (b.URL.IsZero() || b.SizeBytes < 0 || apiclient.CheckID("id", b.JobID) != nil) {
			t.Fatalf("bundle %+v", b)
		}
	})
}

// FuzzTriggerAutomation decodes fuzzed answers of the trigger: never a
// panic or the key in an error, and a success names the automation and
// hands back only ids CheckID accepts.
func FuzzTriggerAutomation(f *testing.F) {
	f.Add([]byte(`{"schemaId":"wf","instanceId":"i","jobId":"j"}`), uint16(0))
	f.Add([]byte(`{"schemaId":5}`), uint16(0))
	f.Add([]byte(`{"jobId":"a\nb","instanceId":""}`), uint16(0))
	f.Add([]byte(``), uint16(1))
	f.Add([]byte(`{"error":"Automation is not active mint_test_key_0123"}`), uint16(2))
	f.Fuzz(func(t *testing.T, body []byte, status uint16) {
		c := fuzzClient(t, bodyTransport{status: fuzzStatus(status), body: body})
		run, err := c.TriggerAutomation(context.Background(), "docs", "wf")
		if err != nil {
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the key: %v", err)
			}
			return
		}
		if apiclient.CheckID("id", run.SchemaID) != nil {
			t.Fatalf("schema id %q", run.SchemaID)
		}
		for _, id := range []string{run.InstanceID, run.JobID} {
			if id != "" && apiclient.CheckID("id", id) != nil {
				t.Fatalf("id %q", id)
			}
		}
	})
}
