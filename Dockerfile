# The licensing server as a container image: one static binary (musl, with mimalloc as its
# allocator) on an empty base, run as uid 65532, its data on the volume /data.
#
#   docker build -t licensing-server .
#   docker run -d --name licensing -p 3000:3000 -v licensing-data:/data licensing-server
#
# The first stage compiles the server in Rust's image. To package a binary built on the host
# instead (CI does: it pulls no image), build it and stage the image's files with
#   bash .ci/image.sh --stage
# then build with `--build-arg BINARY=staged`. Podman builds the same file: `podman build --format docker .`
# (its default OCI format has no HEALTHCHECK).

ARG RUST_IMAGE=docker.io/library/rust:1.95-bookworm
ARG BINARY=compiled

# ---- the server, compiled from this source ----
FROM ${RUST_IMAGE} AS compiled
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN cargo build --release --locked --target x86_64-unknown-linux-musl \
      -p licensing-server --bin licensing-server \
 && bash .ci/image.sh --stage-only target/x86_64-unknown-linux-musl/release/licensing-server /out

# ---- or the files staged on the host by `.ci/image.sh --stage` ----
FROM scratch AS staged
COPY target/image-root/ /out/

FROM ${BINARY} AS binary

# ---- the image: nothing but the server, CA certificates and its user ----
FROM scratch
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="licensing-server" \
      org.opencontainers.image.description="Self-hosted license management and verification server" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://example.invalid/licensing" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
COPY --from=binary /out/usr/ /usr/
COPY --from=binary /out/etc/ /etc/
# /data itself, 0700 and the server's (a new volume takes both from the image).
COPY --from=binary --chown=65532:65532 /out/volume/ /
USER 65532:65532
ENV LICENSING_LISTEN=0.0.0.0:3000 \
    LICENSING_DATA_DIR=/data \
    LICENSING_SHUTDOWN_TIMEOUT_SECS=8 \
    LICENSING_FIRST_START_CREDENTIALS=log \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/licensing-server", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/licensing-server"]
CMD ["serve"]
