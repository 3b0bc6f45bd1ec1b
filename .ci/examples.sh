#!/usr/bin/env bash
# Runs the SDK examples as a newcomer would: `quickstart` on its own; `vendor_backend` and
# `desktop_app` against a server started from the CLI with a team made by `team create`.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build -q -p licensing-server --bin licensing-server
cargo build -q -p licensing-sdk --examples

echo "-- quickstart"
cargo run -q -p licensing-sdk --example quickstart

data=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$data"
}
trap cleanup EXIT

team=$(target/debug/licensing-server team create --name "CI examples" --data-dir "$data")
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])" <<<"$team"; }
LICENSING_TEAM_ID=$(field teamId)
LICENSING_API_KEY=$(field apiKey)
LICENSING_PUBLIC_KEY=$(field publicKey)
LICENSING_SIGNING_KEY=$(field signingKey)
export LICENSING_TEAM_ID LICENSING_API_KEY LICENSING_PUBLIC_KEY LICENSING_SIGNING_KEY

target/debug/licensing-server --listen 127.0.0.1:0 --data-dir "$data" \
  >"$data/server.out" 2>"$data/server.err" &
server=$!
url=""
for _ in $(seq 1 200); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$data/server.out" | head -n 1 || true)
  [ -n "$url" ] && break
  sleep 0.05
done
if [ -z "$url" ]; then
  echo "the server did not start:" >&2
  cat "$data/server.err" >&2
  exit 1
fi
export LICENSING_URL="$url"

echo "-- vendor_backend"
cargo run -q -p licensing-sdk --example vendor_backend | tee "$data/vendor.out"
LICENSE_KEY=$(sed -n 's/^LICENSE_KEY=//p' "$data/vendor.out")
export LICENSE_KEY

echo "-- desktop_app"
APP_RUN_SECONDS=3 cargo run -q -p licensing-sdk --example desktop_app

kill -TERM "$server"
wait "$server"
server=""
echo "examples: all ran"
