# The image copies a prebuilt static binary onto a small non-root base, as
# the Prometheus ecosystem's promu and goreleaser images do: build the binary
# first, then the image (`make image` does both):
#
#   make image-binary                          # .build/linux-$(go env GOARCH)/mintlify_exporter
#   docker build -t mintlify_exporter .
#
# Several architectures: `make image-binary IMAGE_ARCH=arm64` for each, then
# `docker buildx build --platform linux/amd64,linux/arm64 ...`; TARGETOS and
# TARGETARCH pick the binary. Another base (e.g. quay.io/prometheus/busybox or
# scratch plus CA certificates) via --build-arg BASE=...: the binary is static
# and embeds time zone data, and needs only a writable /tmp for the sandbox.
#
# No secret is baked in: pass the key at run time through the MINTLIFY_API_KEY
# environment variable or a mounted --mintlify.api-key-file.
ARG BASE=gcr.io/distroless/static-debian12:nonroot
FROM ${BASE}
ARG TARGETOS
ARG TARGETARCH
COPY .build/${TARGETOS}-${TARGETARCH}/mintlify_exporter /bin/mintlify_exporter
# The working directory holds the agent job state (the default
# --agent.state-file is relative); mount a volume there to keep it.
COPY --chown=65532:65532 .build/state/ /var/lib/mintlify_exporter/
WORKDIR /var/lib/mintlify_exporter
USER 65532:65532
EXPOSE 9871
ENTRYPOINT ["/bin/mintlify_exporter"]
