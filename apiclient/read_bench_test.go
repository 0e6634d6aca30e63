package apiclient_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// BenchmarkDecodeViewsPage decodes a page of 1,000 rows of /views as the
// client reads every page (the tolerant reader, apiclient/read.go): the
// cost of each row of a walk, apart from the network.
func BenchmarkDecodeViewsPage(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"totals":{"human":123456,"ai":7890,"total":131346},"views":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"path":"/docs/section-%d/page-%d","human":%d,"ai":%d,"total":%d}`, i%37, i, 1000+i, i%50, 1000+i+i%50)
	}
	sb.WriteString(`],"hasMore":true}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var p apiclient.ViewsPage
		if err := json.Unmarshal(body, &p); err != nil || len(p.Rows) != 1000 || p.Skipped.Total() != 0 {
			b.Fatalf("%v: %d rows, %v skipped", err, len(p.Rows), p.Skipped)
		}
	}
}
