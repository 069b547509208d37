# largo as a container image: a static binary on an empty base, run as a
# user without privileges, serving the volume /data on port 8080.
#
#   docker build -t largo .
#   docker run -p 8080:8080 -v "$PWD:/data" largo
#   docker run -p 8080:8080 -v "$PWD:/data" -e LARGO_UPLOAD=true largo   # prints a write token
#
# Every flag of largo serve reads a LARGO_ variable (docs/reference/largo_serve.md).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# No C code: the binary needs no C library and runs on an empty base.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/largo ./cmd/largo
# The folders the image needs, owned by the user it runs as: the served
# folder and a temporary folder (bucket uploads stage their parts there).
RUN mkdir -p /out/data /out/tmp && chown 65532:65532 /out/data && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/largo /largo
COPY --from=build /out/tmp /tmp
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV LARGO_LISTEN=0.0.0.0:8080 TMPDIR=/tmp
VOLUME /data
EXPOSE 8080
# The image has no shell and no curl: largo probes itself, at the address
# LARGO_LISTEN names (an unspecified host is asked on the loopback address).
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 CMD ["/largo", "healthcheck"]
ENTRYPOINT ["/largo"]
CMD ["serve", "/data"]
