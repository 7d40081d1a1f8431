# For users who build with a container engine. `make image` builds the same
# image without one (hack/release/image): same entrypoint, user, labels and
# go build flags, kept equal by TestDockerfileEquivalent. The
# differences are the base's content (distroless also ships tzdata, which
# the binary embeds anyway, os-release and dpkg metadata) and where the CA
# certificates come from (Debian here, Mozilla's store through a pinned Go
# module there).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) -t scaleplane .
FROM golang:1.26 AS build
ARG VERSION=(devel)
ARG COMMIT=unknown
WORKDIR /src
# The binary is module cmd/scaleplane; its go.mod replaces the other
# scaleplane modules by their folders, whose go.mod files it reads.
COPY go.mod go.sum ./
COPY promql/go.mod promql/go.sum promql/
COPY controllers/autoscaler/go.mod controllers/autoscaler/go.sum controllers/autoscaler/
COPY externalscaler/go.mod externalscaler/go.sum externalscaler/
COPY certs/go.mod certs/go.sum certs/
COPY cmd/scaleplane/go.mod cmd/scaleplane/go.sum cmd/scaleplane/
RUN cd cmd/scaleplane && go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOFLAGS= go build -C ./cmd/scaleplane -trimpath -buildvcs=false -tags nodev \
    -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/scaleplane .

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=(devel)
ARG COMMIT=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT} \
      org.opencontainers.image.source=https://github.com/scaleplane/scaleplane \
      org.opencontainers.image.created=${CREATED} \
      org.opencontainers.image.title=scaleplane \
      org.opencontainers.image.description="Admission webhooks, controllers and a trigger autoscaler that make workload custom resources scalable." \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/scaleplane /scaleplane
USER 65532:65532
ENTRYPOINT ["/scaleplane"]
