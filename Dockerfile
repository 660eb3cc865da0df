# The resyncd image for those who build with Docker. `make image` builds the
# same image without a Docker engine (tools/image).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /resyncd ./cmd/resyncd

FROM gcr.io/distroless/static:nonroot
COPY --from=build /resyncd /resyncd
USER 65532:65532
ENTRYPOINT ["/resyncd"]
CMD ["run"]
