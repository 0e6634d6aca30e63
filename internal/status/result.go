package status

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// Results of a refresh: ResultOK or an error category. The page and the JSON
// show only these, never an error's text, which may quote the API's answer.
const (
	ResultOK = "ok"
	// ResultBudgetExhausted: not sent, the organization's budget was spent.
	ResultBudgetExhausted = "budget_exhausted"
	// ResultRateLimited: the API answered 429, or asked to wait past the
	// refresh's deadline.
	ResultRateLimited = "rate_limited"
	// ResultUnauthorized: the API refused the key (401, 403).
	ResultUnauthorized = "unauthorized"
	// ResultNotFound: the API does not know the project (404).
	ResultNotFound = "not_found"
	// ResultClientError: any other 4xx.
	ResultClientError = "client_error"
	// ResultServerError: a 5xx.
	ResultServerError = "server_error"
	// ResultTimeout: the refresh ran out of time.
	ResultTimeout = "timeout"
	// ResultCanceled: the refresh was stopped (shutdown, reload).
	ResultCanceled = "canceled"
	// ResultPagination: the pages did not end as they should (page cap,
	// repeated or empty cursor).
	ResultPagination = "pagination"
	// ResultMalformed: the answer was not the JSON the API documents.
	ResultMalformed = "malformed"
	// ResultNetwork: no answer (connection refused, reset, DNS).
	ResultNetwork = "network"
	// ResultError: anything else.
	ResultError = "error"
)

// resultHelp explains each category on the page.
var resultHelp = map[string]string{
	ResultOK:              "the last refresh succeeded",
	ResultBudgetExhausted: "not sent: the organization's request budget was spent",
	ResultRateLimited:     "the API answered 429 (someone else spends the organization's quota)",
	ResultUnauthorized:    "the API refused the key (401/403)",
	ResultNotFound:        "the API does not know the project (404)",
	ResultClientError:     "the API refused the request (4xx)",
	ResultServerError:     "the API failed (5xx)",
	ResultTimeout:         "the refresh ran out of time",
	ResultCanceled:        "the refresh was stopped",
	ResultPagination:      "the API's pages did not end as they should",
	ResultMalformed:       "the API's answer was not the documented JSON",
	ResultNetwork:         "no answer from the API (network)",
	ResultError:           "the refresh failed (see the exporter's log)",
}

// Classify turns a refresh's error into its result category (ResultOK for
// nil), so that no error text reaches the page.
func Classify(err error) string {
	if err == nil {
		return ResultOK
	}
	// Before the context checks: a budget wait cut short by its context
	// joins both, and the budget is the cause.
	var exhausted *budget.ExhaustedError
	var throttled *apiclient.ThrottledError
	switch {
	case errors.As(err, &exhausted):
		return ResultBudgetExhausted
	case errors.As(err, &throttled):
		return ResultRateLimited
	}
	if code := apiclient.StatusCode(err); code != 0 {
		switch {
		case code == http.StatusTooManyRequests:
			return ResultRateLimited
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return ResultUnauthorized
		case code == http.StatusNotFound:
			return ResultNotFound
		case code >= http.StatusInternalServerError:
			return ResultServerError
		case code >= http.StatusBadRequest:
			return ResultClientError
		}
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var netErr net.Error
	switch {
	case errors.Is(err, apiclient.ErrTooManyPages):
		return ResultPagination
	case errors.Is(err, context.DeadlineExceeded):
		return ResultTimeout
	case errors.Is(err, context.Canceled):
		return ResultCanceled
	case errors.As(err, &syntax), errors.As(err, &typ):
		return ResultMalformed
	case errors.As(err, &netErr):
		if netErr.Timeout() {
			return ResultTimeout
		}
		return ResultNetwork
	}
	return ResultError
}

// category is what the report says of a Demand's Result: a category as
// given (new ones included), "" for none yet, and ResultError for anything
// that is not a category, such as an error's text passed by mistake.
func category(r string) string {
	if r == "" {
		return ""
	}
	if len(r) > 32 {
		return ResultError
	}
	for _, c := range r {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return ResultError
		}
	}
	return r
}
