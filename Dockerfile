# Multi-stage build: a static binary on a distroless, non-root base.
# No secret is baked in: pass the key at run time through the
# MINTLIFY_API_KEY environment variable or a mounted --mintlify.api-key-file.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION} -X github.com/prometheus/common/version.Revision=${REVISION} -X github.com/prometheus/common/version.Branch=docker -X github.com/prometheus/common/version.BuildUser=docker" \
      -o /out/mintlify_exporter . \
 && mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mintlify_exporter /bin/mintlify_exporter
# The working directory holds the agent job state (the default
# --agent.state-file is relative); mount a volume to keep it across containers.
COPY --from=build --chown=65532:65532 /out/state /var/lib/mintlify_exporter
WORKDIR /var/lib/mintlify_exporter
USER 65532:65532
EXPOSE 9871
ENTRYPOINT ["/bin/mintlify_exporter"]
