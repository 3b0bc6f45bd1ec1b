#!/usr/bin/env bash
# The container image, end to end on this machine.
#
#   bash .ci/image.sh --stage-only BINARY OUT   lays out the image's files in OUT: the binary as
#                                               /usr/local/bin/licensing-server, CA certificates,
#                                               /etc/passwd and /etc/group naming uid 65532, and an
#                                               empty volume/data (0700; the image's /data, owned by
#                                               65532); the Dockerfile's build stage runs it
#   bash .ci/image.sh --stage                   builds the static binary here (musl, release) and
#                                               stages target/image-root/ for `--build-arg BINARY=staged`
#   bash .ci/image.sh                           stages, builds the image with podman (no image is
#                                               pulled: the final image is FROM scratch), and checks
#                                               its size (< 48 MiB) and configuration (uid 65532,
#                                               /data, port 3000, the health check); then runs it
#                                               with a volume, a read-only root and no capabilities:
#                                               healthy, the README's tour through the published
#                                               port, the first start's credentials on the volume
#                                               (0600, uid 65532) and in the log, a second container
#                                               on the same volume refused, a restart that keeps the
#                                               data, and a stop by SIGTERM within Docker's 10 s.
#
# Where containers cannot run (no podman, or a machine whose kernel or limits its runtimes
# refuse), it says so and checks what it can: the image's configuration and files. Under CI=true
# a machine that can run them must pass every check.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
root=target/image-root
tag=localhost/licensing-server:ci

stage_only() {
  local binary=$1 out=$2
  rm -rf "$out"
  mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/volume/data"
  cp "$binary" "$out/usr/local/bin/licensing-server"
  # No symbols: the image carries the program, not its debugging aids.
  strip --strip-all "$out/usr/local/bin/licensing-server"
  chmod 0755 "$out/usr/local/bin/licensing-server"
  cp /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/:/sbin/nologin\nlicensing:x:65532:65532:licensing-server:/data:/sbin/nologin\n' >"$out/etc/passwd"
  printf 'root:x:0:\nlicensing:x:65532:\n' >"$out/etc/group"
  chmod 0700 "$out/volume/data"
}

# Rust's standard library for musl: the one download from outside the package registries.
musl_target() {
  grep -qx "$target" <<<"$(rustup target list --installed)" && return 0
  rustup target add "$target" && return 0
  echo "image: notice: the $target target cannot be installed here (no access to Rust's" \
    "distribution server); the image was not built or checked" >&2
  return 1
}

stage() {
  # C parts (aws-lc, mimalloc) are compiled for musl with musl-gcc.
  if ! command -v musl-gcc >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends musl-tools >/dev/null
  fi
  cargo build --release --locked --target "$target" -p licensing-server --bin licensing-server
  local binary="target/$target/release/licensing-server"
  # Static: no interpreter, no shared library.
  if grep -q 'dynamically linked' <<<"$(file "$binary")"; then
    echo "image: $binary is not static" >&2
    exit 1
  fi
  stage_only "$binary" "$root"
  echo "image: staged $root ($(du -sh "$root" | cut -f1))"
}

case "${1:-}" in
  --stage-only) stage_only "$2" "$3"; exit 0 ;;
  --stage) musl_target || exit 1; stage; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--stage | --stage-only BINARY OUT]" >&2; exit 2 ;;
esac

if [ "$(id -u)" != 0 ]; then
  if [ "${CI:-}" = true ]; then
    echo "image: building and running the image here needs root (rootful podman)" >&2
    exit 1
  fi
  echo "image: skipped (building and running the image here needs root)"
  exit 0
fi

need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
# Debian's crun refuses the cgroup v1 hierarchies some machines (this CI's among them) have;
# runc runs there.
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v file >/dev/null 2>&1 || need+=(file)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

musl_target || exit 0
stage

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
echo "-- podman build (BINARY=staged, version $version)"
podman build --quiet --format docker --build-arg BINARY=staged --build-arg "VERSION=$version" -t "$tag" . >/dev/null

echo "-- the image's configuration and files"
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "size: $((size / 1024 / 1024)) MiB ($size bytes)"
# The bound catches a dependency that bloats the binary; the program itself grows with its
# features (the customer portal and its message catalog took it from 39 to 41 MiB).
[ "$size" -lt $((48 * 1024 * 1024)) ] || { echo "image: larger than 48 MiB" >&2; exit 1; }
config() { podman image inspect --format "$1" "$tag"; }
[ "$(config '{{.Config.User}}')" = "65532:65532" ] || { echo "image: user is $(config '{{.Config.User}}')" >&2; exit 1; }
grep -q '"3000/tcp"' <<<"$(config '{{json .Config.ExposedPorts}}')"
grep -q '"/data"' <<<"$(config '{{json .Config.Volumes}}')"
grep -q 'licensing-server","healthcheck' <<<"$(config '{{json .Config.Healthcheck}}')"
grep -q "\"org.opencontainers.image.version\":\"$version\"" <<<"$(config '{{json .Config.Labels}}')"
mounted=$(podman image mount "$tag")
[ "$(stat -c '%a %u:%g' "$mounted/data")" = "700 65532:65532" ] || { echo "image: /data is $(stat -c '%a %u:%g' "$mounted/data")" >&2; exit 1; }
files=$(cd "$mounted" && find . -mindepth 1 | sort | tr '\n' ' ')
podman image unmount "$tag" >/dev/null
echo "files: $files"
expected="./data ./etc ./etc/group ./etc/passwd ./etc/ssl ./etc/ssl/certs ./etc/ssl/certs/ca-certificates.crt ./usr ./usr/local ./usr/local/bin ./usr/local/bin/licensing-server "
[ "$files" = "$expected" ] || { echo "image: unexpected files" >&2; exit 1; }

echo "-- compose.yaml: the server alone; the postgres profile's database and two servers"
python3 - <<'PY'
import yaml
services = yaml.safe_load(open("compose.yaml"))["services"]
alone = [name for name, s in services.items() if not s.get("profiles")]
assert alone == ["server"], alone
assert services["server"]["volumes"] == ["licensing-data:/data"], services["server"]
profiled = sorted(name for name, s in services.items() if "postgres" in s.get("profiles", []))
assert profiled == ["postgres", "server-a", "server-b"], profiled
for name in ("server-a", "server-b"):
    s = services[name]
    assert s["environment"]["LICENSING_DATABASE_URL_FILE"] == "/run/secrets/database-url", s
    assert s["depends_on"]["postgres"]["condition"] == "service_healthy", s
    assert s["read_only"] is True, s
ports = sorted(p for s in services.values() for p in s.get("ports", []))
assert ports == ["3000:3000", "3001:3000", "3002:3000"], ports
print("compose.yaml: ok")
PY

# How containers run here: the defaults, else runc with open-file and process limits this
# machine grants (podman asks for more than some sandboxes allow; the highest that works).
run_opts=()
limits=()
if ! podman run --rm "$tag" --version >/dev/null 2>&1; then
  why=""
  for nofile in "$(ulimit -Hn)" 16384 8192; do
    for nproc in "$(ulimit -Hu)" 32768 16384 4096; do
      try=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
      if why=$(podman --runtime runc run --rm "${try[@]}" "$tag" --version 2>&1); then
        run_opts=(--runtime runc)
        limits=("${try[@]}")
        break 2
      fi
    done
  done
  if [ ${#run_opts[@]} -eq 0 ]; then
    echo "image: containers cannot run on this machine ($(printf '%s' "$why" | tail -1)); the image's configuration and files were checked"
    exit 0
  fi
fi
# Without systemd podman cannot schedule the health check: it is run by hand below instead.
health=()
if [ ! -S /run/systemd/private ]; then
  health=(--health-interval disable)
fi
echo "-- containers run here (${run_opts[*]:-defaults})"
podman "${run_opts[@]}" run --rm "${limits[@]}" "$tag" --version

name=licensing-ci
volume=licensing-ci-data
cleanup() {
  podman "${run_opts[@]}" rm -f -t 0 "$name" "$name-2" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  rm -rf "${secrets:-}"
}
trap cleanup EXIT
cleanup
podman volume create "$volume" >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# The admin token as a secret file (LICENSING_ADMIN_TOKEN_FILE), as Docker and Kubernetes mount
# them.
secrets=$(mktemp -d)
admin_token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
printf '%s\n' "$admin_token" >"$secrets/admin-token"
chmod 0755 "$secrets"
chmod 0644 "$secrets/admin-token"

start() {
  podman "${run_opts[@]}" run -d --name "$name" "${limits[@]}" "${health[@]}" --read-only --cap-drop ALL \
    -p "127.0.0.1:$port:3000" -v "$volume:/data" \
    -v "$secrets/admin-token:/run/secrets/admin-token:ro" \
    -e LICENSING_ADMIN_TOKEN_FILE=/run/secrets/admin-token "$tag" >/dev/null
}

healthy() {
  # The image's own health check, as the engine runs it, until it passes (at most 60 s).
  for _ in $(seq 1 120); do
    if podman "${run_opts[@]}" healthcheck run "$name" >/dev/null 2>&1; then
      return 0
    fi
    if [ "$(podman inspect --format '{{.State.Running}}' "$name")" != true ]; then
      echo "image: the container stopped:" >&2
      podman logs "$name" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  echo "image: never healthy" >&2
  podman logs "$name" >&2 || true
  return 1
}

echo "-- run: a volume, a read-only root, the port published on 127.0.0.1:$port"
start
healthy
curl -fsS "$base/healthz"; echo

echo "-- the admin token, read from its secret file, opens the admin API"
curl -fsS -o /dev/null -H "Authorization: Bearer $admin_token" "$base/api/v1/admin/teams"

echo "-- the process runs as uid 65532"
pid=$(podman inspect --format '{{.State.Pid}}' "$name")
[ "$(stat -c %u "/proc/$pid")" = 65532 ] || { echo "image: the server runs as uid $(stat -c %u "/proc/$pid")" >&2; exit 1; }

echo "-- the first start's credentials: on the volume (0600, uid 65532) and in the log"
data=$(podman volume inspect --format '{{.Mountpoint}}' "$volume")
creds="$data/first-start-credentials.txt"
[ "$(stat -c '%a %u' "$creds")" = "600 65532" ] || { echo "image: $(stat -c '%a %u' "$creds") $creds" >&2; exit 1; }
team=$(sed -n 's/^  team id: *//p' "$creds")
key=$(sed -n 's/^  API key: *\([^ ]*\).*/\1/p' "$creds")
[ -n "$team" ] && [ -n "$key" ]
# (The log is read whole first: `grep -q` stopping early would fail the pipe under pipefail.)
logs=$(podman logs "$name" 2>&1)
grep -qF "$key" <<<"$logs" || { echo "image: the API key is not in the log" >&2; exit 1; }
if grep -q 'took their permissions away' <<<"$logs"; then
  echo "image: the volume's /data was not the server's alone" >&2
  exit 1
fi

echo "-- the README's tour through the published port: create a license, verify it"
auth=(-H "Authorization: Bearer $key" -H 'Content-Type: application/json')
created=$(curl -fsS -X POST "${auth[@]}" -d '{"expirationType":"NEVER","hwidLimit":1}' \
  "$base/api/v1/dev/teams/$team/licenses")
license=$(printf '%s' "$created" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["licenseKey"])')
id=$(printf '%s' "$created" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["id"])')
verified=$(curl -fsS -X POST -H 'Content-Type: application/json' \
  -d "{\"licenseKey\":\"$license\",\"hardwareIdentifier\":\"container-test-machine\"}" \
  "$base/api/v1/client/teams/$team/verification/verify")
printf '%s' "$verified" | python3 -c 'import json, sys; r = json.load(sys.stdin)["result"]; assert r["code"] == "VALID", r; print("verify:", r["code"])'

echo "-- a second container on the same volume is refused (the store's lock), loudly"
set +e
second=$(timeout 60 podman "${run_opts[@]}" run --name "$name-2" "${limits[@]}" --read-only \
  -v "$volume:/data" "$tag" 2>&1)
status=$?
set -e
[ "$status" -ne 0 ] || { echo "image: a second server opened the same store" >&2; exit 1; }
printf '%s\n' "$second" | tail -3
grep -qi 'lock\|in use' <<<"$second" || { echo "image: the second server did not say why" >&2; exit 1; }

echo "-- restart (SIGTERM, then start again): the data is kept"
podman "${run_opts[@]}" restart -t 10 "$name" >/dev/null
healthy
curl -fsS "${auth[@]}" "$base/api/v1/dev/teams/$team/licenses/id/$id" \
  | python3 -c 'import json, sys; d = json.load(sys.stdin)["data"]; assert d["licenseKey"], d; print("license kept:", d["id"])'

echo "-- stop by SIGTERM: the server finishes and exits 0 within Docker's 10 s"
stopped_at=$SECONDS
podman "${run_opts[@]}" stop -t 10 "$name" >/dev/null
took=$((SECONDS - stopped_at))
exit_code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
echo "stopped in ${took}s, exit code $exit_code"
[ "$exit_code" = 0 ] || { echo "image: exit code $exit_code after SIGTERM" >&2; podman logs "$name" | tail -5 >&2; exit 1; }
[ "$took" -lt 10 ]
logs=$(podman logs "$name" 2>&1)
grep -q 'shutting down' <<<"$logs" || { echo "image: no shutdown in the log" >&2; exit 1; }
echo "image: every check passed"
