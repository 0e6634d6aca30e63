package orgs

import (
	"errors"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// ClientFlags are the API client's settings every organization shares.
type ClientFlags struct {
	// Config holds the base URL, timeout and retries; key, budget,
	// metrics and logger are set by the caller.
	Config apiclient.Config
}

// RegisterClientFlags adds the API client's flags to app.
func RegisterClientFlags(app config.Flagger) *ClientFlags {
	f := &ClientFlags{Config: apiclient.Config{BaseURL: apiclient.DefaultBaseURL, Timeout: 30 * time.Second, MaxRetries: 2}}
	c := &f.Config
	app.Flag("mintlify.api-url", "Base URL of the Mintlify API.").Default(c.BaseURL).StringVar(&c.BaseURL)
	config.DurationVar(app, "mintlify.timeout", "Timeout of each HTTP request to the API.", &c.Timeout)
	config.IntVar(app, "mintlify.max-retries", "Retries of a failed read (analytics, get job) after the first try.", &c.MaxRetries)
	return f
}

// Validate names the flag of the first invalid setting.
func (f *ClientFlags) Validate() error {
	switch {
	case f.Config.Timeout <= 0:
		return errors.New("--mintlify.timeout: must be greater than 0")
	case f.Config.MaxRetries < 0:
		return fmt.Errorf("--mintlify.max-retries: must be 0 or greater, got %d", f.Config.MaxRetries)
	}
	if _, err := apiclient.New(f.Config); err != nil {
		return fmt.Errorf("--mintlify.api-url: %w", err)
	}
	return nil
}
