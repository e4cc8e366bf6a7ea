# The operator image: `make docker-build IMG=registry/paddlejob-operator:tag`.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
COPY config/ config/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/paddlejob-operator ./cmd/paddlejob-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/paddlejob-operator /paddlejob-operator
USER 65532:65532
ENTRYPOINT ["/paddlejob-operator"]
