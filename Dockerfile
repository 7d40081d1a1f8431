# Multi-stage build of the scaleplane binary: static, on distroless, non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/scaleplane ./cmd/scaleplane

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/scaleplane /scaleplane
USER 65532:65532
ENTRYPOINT ["/scaleplane"]
