# syntax=docker/dockerfile:1
# Front-end packages from the npm registry, pinned by package-lock.json.
FROM node:20-bookworm-slim AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# cgo build (mattn/go-sqlite3 needs gcc).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=assets /src/node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
COPY --from=assets /src/node_modules/htmx-ext-sse/dist/sse.min.js static/vendor/sse.min.js
RUN go tool templ generate -log-level error && CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/tessera .

# Slim glibc runtime, non-root, data on a volume.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data tessera && mkdir -p /data && chown tessera /data
COPY --from=build /out/tessera /usr/local/bin/tessera
USER tessera
WORKDIR /data
VOLUME ["/data"]
ENV TESSERA_ADDR=0.0.0.0:8080 TESSERA_DB=/data/tessera.db
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD ["tessera", "healthcheck"]
ENTRYPOINT ["tessera"]
CMD ["serve"]
