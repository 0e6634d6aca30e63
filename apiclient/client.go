// Package apiclient is a typed client for the Mintlify admin API: the
// analytics endpoints (one file each) and the operation endpoints (agent
// jobs, deployments, automations, static exports). It owns the
// transport concerns every caller needs: auth, timeouts, bounded retries with
// backoff, Retry-After, response size limits and request metrics.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/version"

	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// DefaultBaseURL is the public API.
const DefaultBaseURL = "https://api.mintlify.com"

// maxResponseBytes bounds a success body. A full visitors page of 250 rows is
// tens of KiB; anything near this limit is not a response we understand.
const maxResponseBytes = 8 << 20

// Config configures a Client.
type Config struct {
	// BaseURL is the API root, e.g. https://api.mintlify.com.
	BaseURL string
	// APIKey is sent as a Bearer token and nowhere else.
	APIKey string
	// Redactor, when set, is the process's one redactor (shared with its
	// logger and its label values): New adds APIKey to it, so that the key
	// is masked wherever the process writes, not only in this client's
	// errors. Nil: the client redacts its own errors only.
	Redactor *secrets.Redactor
	// Timeout bounds each HTTP attempt (default 30s).
	Timeout time.Duration
	// MaxRetries is how many times a read is retried after the first try.
	MaxRetries int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// retries (defaults 500ms and 30s); each wait is drawn uniformly from
	// [d/2, d] so that many clients do not retry in step.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// HTTPClient defaults to a client with sensible transport timeouts.
	HTTPClient *http.Client
	// Metrics may be nil.
	Metrics *Metrics
	// Logger may be nil.
	Logger log.Logger
	// AnalyticsBudget, when set, paces every request to the analytics
	// endpoints, retries included, and hears of every 429 they answer: the
	// API counts them against one quota per organization.
	AnalyticsBudget Limiter
	// Now is the clock Retry-After dates and pauses are read on (nil =
	// time.Now). Give it the budget's and the scheduler's clock, so that a
	// test moves them all at once.
	Now func() time.Time
	// Sleep waits d on that clock, or until ctx ends, returning ctx's error
	// then (nil = a real timer): the backoff between retries and the wait
	// for a Retry-After. A test's Sleep moves its clock instead of waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Limiter paces requests to endpoints that share a quota.
type Limiter interface {
	// Wait blocks until one more request may be sent and counts it as sent.
	Wait(ctx context.Context) error
	// Rejected reports that the API refused a request for its quota (429),
	// asking for retryAfter (0 when it did not say).
	Rejected(retryAfter time.Duration)
}

// Client talks to the API. It is safe for concurrent use.
type Client struct {
	base *url.URL
	// key is the Bearer token, swapped whole by SetAPIKey.
	key atomic.Pointer[string]
	// redactor masks the keys, altered echoes included, in error texts.
	redactor *secrets.Redactor
	timeout  time.Duration
	retries  int
	backoff  struct{ base, max time.Duration }
	http     *http.Client
	metrics  *Metrics
	logger   log.Logger
	ua       string
	// analytics paces the analytics endpoints; nil means unpaced.
	analytics Limiter
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error

	mu sync.Mutex
	// notBefore holds, per endpoint, the time before which the API asked us
	// (via Retry-After) to send nothing. Per endpoint because the API's limits
	// are per operation: a create-job limit must not stall analytics.
	notBefore map[string]time.Time
	// clampWarned holds the endpoint and field of each value refused
	// (reportClamped) that was warned of.
	clampWarned sync.Map
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("invalid API URL %q: want http(s)://host[/prefix]", cfg.BaseURL)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("max retries must be >= 0, got %d", cfg.MaxRetries)
	}
	c := &Client{
		base:      base,
		redactor:  cfg.Redactor,
		timeout:   cfg.Timeout,
		retries:   cfg.MaxRetries,
		http:      cfg.HTTPClient,
		metrics:   cfg.Metrics,
		logger:    cfg.Logger,
		ua:        "mintlify_exporter/" + version.Version,
		notBefore: map[string]time.Time{},
		analytics: cfg.AnalyticsBudget,
		now:       cfg.Now,
		sleep:     cfg.Sleep,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	if c.timeout <= 0 {
		c.timeout = 30 * time.Second
	}
	if c.redactor == nil {
		c.redactor = secrets.NewRedactor()
	}
	c.backoff.base, c.backoff.max = cfg.BackoffBase, cfg.BackoffMax
	if c.backoff.base <= 0 {
		c.backoff.base = 500 * time.Millisecond
	}
	if c.backoff.max <= 0 {
		c.backoff.max = 30 * time.Second
	}
	if c.http == nil {
		c.http = &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				TLSHandshakeTimeout:   10 * time.Second,
				ResponseHeaderTimeout: c.timeout,
				MaxIdleConnsPerHost:   8,
				IdleConnTimeout:       90 * time.Second,
			},
			// Never follow redirects: Go resends the Authorization header
			// to the same host on any port, and the API documents none.
			// A 3xx is reported as an error carrying its status.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if c.logger == nil {
		c.logger = log.NewNopLogger()
	}
	c.SetAPIKey(cfg.APIKey)
	return c, nil
}

// SetAPIKey replaces the key from the next request on (a rotated key,
// read again by a configuration reload).
func (c *Client) SetAPIKey(key string) {
	c.redactor.Add(key) // the old key stays masked too
	c.key.Store(&key)
}

// request describes one API operation.
type request struct {
	endpoint string
	method   string
	path     string // already escaped
	query    url.Values
	body     []byte
	// idempotent operations are retried; others only when the request
	// certainly never left this process.
	idempotent bool
	// status, when set, receives the HTTP status of the successful answer.
	status *int
	// emptyOK: a 2xx answer with an empty body is a success (out is left
	// as it is).
	emptyOK bool
	// private: the answer holds free text (feedback comments, contact
	// addresses, search queries, assistant questions): an error never
	// quotes its body.
	private bool
	// secret: the answer holds a credential (a presigned URL): an error
	// quotes neither the answer nor an error answer's body, only the
	// API's own {error} text (see withholdSecrets).
	secret bool
}

// do runs req with retries and decodes a 2xx JSON body into out.
func (c *Client) do(ctx context.Context, req request, out any) error {
	for attempt := 0; ; attempt++ {
		status, retryable, err := c.attempt(ctx, req, out)
		if err == nil {
			if cl, ok := out.(clamper); ok {
				c.reportClamped(req.endpoint, cl.clamp())
			}
			if req.status != nil {
				*req.status = status
			}
			return nil
		}
		if !retryable || attempt >= c.retries {
			return err
		}
		wait := c.backoffFor(attempt)
		level.Debug(c.logger).Log("msg", "retrying API request", "endpoint", req.endpoint, "status", status, "attempt", attempt+1, "wait", wait, "err", err)
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("%w (gave up retrying: %w)", err, serr)
		}
	}
}

// sleep waits d on a real timer, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) backoffFor(attempt int) time.Duration {
	d := c.backoff.base << attempt
	if d > c.backoff.max || d <= 0 {
		d = c.backoff.max
	}
	return d/2 + rand.N(d/2+1)
}

// attempt sends req once. It reports the HTTP status (0 when none was
// received) and whether trying again may succeed.
func (c *Client) attempt(ctx context.Context, req request, out any) (int, bool, error) {
	if err := c.waitGate(ctx, req.endpoint); err != nil {
		// Nothing was sent, but trying again cannot help: the caller's
		// deadline falls before the gate opens, or its context is done.
		return 0, false, err
	}
	if err := takeRequest(ctx, req.endpoint); err != nil {
		return 0, false, err
	}
	analytics := c.analytics != nil && isAnalytics(req.endpoint)
	if analytics {
		if err := c.analytics.Wait(ctx); err != nil {
			return 0, false, fmt.Errorf("mintlify API %s: %w", req.endpoint, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	httpReq, err := c.newHTTPRequest(ctx, req)
	if err != nil {
		return 0, false, fmt.Errorf("mintlify API %s: building request: %w", req.endpoint, err)
	}

	// Latency is measured on the real clock, like the HTTP timeouts that
	// bound it: it is the network's time, not the schedule's.
	start := time.Now()
	resp, err := c.http.Do(httpReq)
	if err != nil {
		c.metrics.observe(req.endpoint, 0, time.Since(start))
		err = fmt.Errorf("mintlify API %s: %w", req.endpoint, c.redactor.Error(err))
		// A failed dial never reached the server; anything later might have.
		return 0, req.idempotent || isDialError(err), err
	}
	defer resp.Body.Close()
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	c.metrics.observe(req.endpoint, resp.StatusCode, time.Since(start))
	level.Debug(c.logger).Log("msg", "API request", "endpoint", req.endpoint, "method", req.method, "path", httpReq.URL.Path, "status", resp.StatusCode, "duration", time.Since(start))

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, req.idempotent && retryableStatus(resp.StatusCode), c.statusError(req, resp, data, analytics)
	}
	retryable, err := c.decodeBody(req, resp.StatusCode, data, readErr, out)
	return resp.StatusCode, retryable, err
}

// newHTTPRequest builds the HTTP request of req, with the key and the
// headers the API wants.
func (c *Client) newHTTPRequest(ctx context.Context, req request) (*http.Request, error) {
	// req.path is already escaped: Path must hold its unescaped form and
	// RawPath the escaped one, or url.URL escapes the escapes again (an id
	// "a/b" would be sent as a%252Fb, i.e. as the id "a%2Fb").
	u := *c.base
	u.RawPath = c.base.EscapedPath() + req.path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, err
	}
	u.Path = p
	u.RawQuery = req.query.Encode()
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	key := *c.key.Load()
	httpReq.Header.Set("Authorization", "Bearer "+key)
	httpReq.Header.Set("User-Agent", c.ua)
	httpReq.Header.Set("Accept", "application/json")
	if req.body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	return httpReq, nil
}

// retryableStatus: a rate limit or a server fault may pass (for a request
// that is safe to send again).
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// statusError is the error of an answer that is not a 2xx. A Retry-After
// on a 429 or 503 closes the endpoint's gate until then, and a 429 on an
// analytics endpoint tells the budget.
func (c *Client) statusError(req request, resp *http.Response, data []byte, analytics bool) error {
	now := c.now()
	retryAfter := parseRetryAfter(resp.Header.Get("Retry-After"), now)
	if retryAfter > 0 && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		c.setGate(req.endpoint, now.Add(retryAfter))
	}
	if analytics && resp.StatusCode == http.StatusTooManyRequests {
		c.analytics.Rejected(retryAfter)
	}
	apiErr := newAPIError(req.endpoint, resp.StatusCode, data, retryAfter, c.redactor)
	if req.secret {
		withholdSecrets(apiErr)
	}
	return apiErr
}

// decodeBody decodes the body of a 2xx answer into out (readErr is the
// error reading it), and reports whether trying again may succeed.
func (c *Client) decodeBody(req request, status int, data []byte, readErr error, out any) (bool, error) {
	if readErr != nil {
		return req.idempotent, fmt.Errorf("mintlify API %s: reading response: %w", req.endpoint, readErr)
	}
	if len(data) > maxResponseBytes {
		return false, fmt.Errorf("mintlify API %s: response larger than %d bytes", req.endpoint, maxResponseBytes)
	}
	if req.emptyOK && len(bytes.TrimSpace(data)) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		if req.private {
			return false, fmt.Errorf("mintlify API %s: decoding response (HTTP %d, %d bytes, not quoted: it may hold personal data): %w",
				req.endpoint, status, len(data), err)
		}
		return false, c.redactor.Error(fmt.Errorf("mintlify API %s: decoding response (HTTP %d, body %q): %w",
			req.endpoint, status, truncate(c.redactor.String(string(data)), 128), err))
	}
	return false, nil
}

// reportSkipped counts what a walk (or one answer read alone) skipped in
// mintlify_api_rows_skipped_total and logs it once: a row is skipped and
// the walk stands, but an operator hears of it. Only the reasons and
// counts: never a row's text.
func (c *Client) reportSkipped(endpoint, projectID string, skipped Skips) {
	if n := skipped.Total(); n > 0 {
		c.metrics.skipped(endpoint, skipped)
		level.Warn(c.logger).Log("msg", "values the API sent could not be read: skipped, the walk's other rows stand",
			"endpoint", endpoint, "project", projectID, "skipped", n, "reasons", skipped.String())
	}
}

// isAnalytics reports whether an endpoint draws on the organization's
// analytics quota: every endpoint but the agent job ones, so that an
// endpoint forgotten in AnalyticsEndpoints still pays the budget.
func isAnalytics(endpoint string) bool { return !slices.Contains(operationEndpoints, endpoint) }

// segment escapes an id for use as one path segment. "." and ".." are
// refused: servers and proxies resolve them as dot segments, so the request
// would reach another resource than the one named.
func segment(what, id string) (string, error) {
	switch id {
	case "":
		return "", fmt.Errorf("empty %s", what)
	case ".", "..":
		return "", fmt.Errorf("invalid %s %q", what, id)
	}
	return url.PathEscape(id), nil
}

// waitGate blocks until the endpoint's Retry-After has passed. When that is
// later than ctx's deadline it fails at once rather than sleep in vain.
func (c *Client) waitGate(ctx context.Context, endpoint string) error {
	c.mu.Lock()
	until := c.notBefore[endpoint]
	c.mu.Unlock()
	wait := until.Sub(c.now())
	if wait <= 0 {
		return nil
	}
	// A context's deadline is on the real clock, the gate on c's: compare
	// what is left of each.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return &ThrottledError{Endpoint: endpoint, Until: until}
	}
	if c.sleep(ctx, wait) != nil {
		return &ThrottledError{Endpoint: endpoint, Until: until}
	}
	return nil
}

func (c *Client) setGate(endpoint string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until.After(c.notBefore[endpoint]) {
		c.notBefore[endpoint] = until
	}
}

// ThrottledUntil reports when the endpoint may be called again, or the zero
// time if it may be called now.
func (c *Client) ThrottledUntil(endpoint string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.notBefore[endpoint]; c.now().Before(t) {
		return t
	}
	return time.Time{}
}

// maxRetryAfter caps what a server may ask for, so a bogus header cannot
// silence an endpoint for days.
const maxRetryAfter = time.Hour

// parseRetryAfter reads delay-seconds or an HTTP date; 0 if absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter // and no overflow of secs*time.Second
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d < 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

func isDialError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
