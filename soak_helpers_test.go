//go:build soak

package main

// Copies of internal/e2e's helpers that the soak test alone uses (see
// inprocess_helpers_test.go).

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// submitKeyed posts a prompt with an Idempotency-Key; it returns the HTTP
// status and the job id (2xx) or the error message.
func submitKeyed(client *http.Client, url, key, prompt string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var v struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, v.ID, nil
	}
	return resp.StatusCode, v.Error, nil
}

func getBody(url string) ([]byte, int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}
