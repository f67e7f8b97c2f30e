# The convstream image, for those who build with Docker:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%FT%TZ) -t convstream:0.1.0 .
# `make image` builds the same image without a daemon (deploy/image, an OCI
# layout in bin/image); deploy/image's TestDockerfileMatches keeps the two
# equal in user, entrypoint, binaries, build flags and labels.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/convctl ./cmd/convctl && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/orchestrator ./cmd/orchestrator

# distroless static, nonroot: passwd with user 65532 "nonroot", its home,
# /tmp, CA certificates and time zones; no shell.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.source="https://github.com/convstream/convstream" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.title="convstream" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION"
COPY --from=build /out/worker /out/convctl /out/orchestrator /usr/local/bin/
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
