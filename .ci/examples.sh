#!/usr/bin/env bash
# Runs the SDK examples as a newcomer would: `quickstart` on its own; `vendor_backend` and
# `desktop_app` against a server started from the CLI with a team made by `team create`;
# `floating_app` as five copies at once on a five-seat license (a sixth is refused, and starts
# once the five gave their seats back); `offline_app` once with the server up (it checks the
# license out) and once after the server has stopped (it runs from its license file).
set -euo pipefail
cd "$(dirname "$0")/.."

# The programs `cargo test --workspace` built just before (it builds the examples and the server's
# binary too): `cargo run -p licensing-sdk` would resolve features for one package and so build
# the server and about a hundred crates a second time. Without that build, this builds it.
programs=$(mktemp)
cargo test -q --workspace --no-run --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and not m["profile"]["test"] and m["target"]["kind"] in (["example"], ["bin"]):
        print(m["target"]["name"], m["executable"])
' >"$programs"
program() {
  local path
  path=$(awk -v name="$1" '$1 == name { print $2 }' "$programs")
  if [ -z "$path" ]; then
    echo "no program named $1 in the workspace's test build" >&2
    exit 1
  fi
  echo "$path"
}
quickstart=$(program quickstart)
vendor_backend=$(program vendor_backend)
desktop_app=$(program desktop_app)
offline_app=$(program offline_app)
floating_app=$(program floating_app)
self_update=$(program self_update)
server_bin=$(program licensing-server)
rm -f "$programs"

echo "-- quickstart"
"$quickstart"

data=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$data"
}
trap cleanup EXIT

team=$("$server_bin" team create --name "CI examples" --data-dir "$data")
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])" <<<"$team"; }
LICENSING_TEAM_ID=$(field teamId)
LICENSING_API_KEY=$(field apiKey)
LICENSING_PUBLIC_KEY=$(field publicKey)
LICENSING_SIGNING_KEY=$(field signingKey)
export LICENSING_TEAM_ID LICENSING_API_KEY LICENSING_PUBLIC_KEY LICENSING_SIGNING_KEY

"$server_bin" --listen 127.0.0.1:0 --data-dir "$data" \
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
"$vendor_backend" | tee "$data/vendor.out"
LICENSE_KEY=$(sed -n 's/^LICENSE_KEY=//p' "$data/vendor.out")
export LICENSE_KEY

echo "-- self_update"
"$self_update"

echo "-- desktop_app"
APP_RUN_SECONDS=3 "$desktop_app"

echo "-- floating_app: five seats, five copies at once, a sixth refused"
FLOATING_KEY=$(python3 - <<'PY'
import json, os, urllib.request
request = urllib.request.Request(
    f"{os.environ['LICENSING_URL']}/api/v1/dev/teams/{os.environ['LICENSING_TEAM_ID']}/licenses",
    data=json.dumps({"expirationType": "NEVER", "sessionLimit": 5, "sessionTtl": 60}).encode(),
    headers={"Authorization": f"Bearer {os.environ['LICENSING_API_KEY']}",
             "Content-Type": "application/json"},
)
print(json.load(urllib.request.urlopen(request))["data"]["licenseKey"])
PY
)
copies=()
for i in 1 2 3 4 5; do
  LICENSE_KEY="$FLOATING_KEY" APP_RUN_SECONDS=15 "$floating_app" >"$data/floating$i.out" 2>&1 &
  copies+=($!)
done
# Wait (bounded) until the five hold their seats.
for _ in $(seq 1 600); do
  taken=$(cat "$data"/floating?.out | grep -c "Seat taken" || true)
  [ "$taken" -eq 5 ] && break
  sleep 0.05
done
if [ "$taken" -ne 5 ]; then
  echo "five copies did not all take a seat:" >&2
  cat "$data"/floating?.out >&2
  exit 1
fi
status=0
LICENSE_KEY="$FLOATING_KEY" APP_RUN_SECONDS=0 "$floating_app" >"$data/floating6.out" 2>&1 || status=$?
cat "$data/floating6.out"
if [ "$status" -ne 2 ] || ! grep -q "Every seat of this license is in use" "$data/floating6.out"; then
  echo "the sixth copy was not refused (status $status)" >&2
  exit 1
fi
# The five run their time and end, giving their seats back; then a copy starts again.
for pid in "${copies[@]}"; do wait "$pid"; done
grep -c "Seat given back" "$data"/floating?.out
LICENSE_KEY="$FLOATING_KEY" APP_RUN_SECONDS=0 "$floating_app" | tee "$data/floating7.out"
grep -q "Seat given back" "$data/floating7.out"

echo "-- offline_app, online: checks the license out"
APP_DATA_DIR="$data/offline-app" "$offline_app" | tee "$data/offline1.out"
grep -q "checking the license out" "$data/offline1.out"

kill -TERM "$server"
wait "$server"
server=""

echo "-- offline_app, with the server gone: runs from its license file"
APP_DATA_DIR="$data/offline-app" "$offline_app" | tee "$data/offline2.out"
grep -q "Licensed offline" "$data/offline2.out"
echo "examples: all ran"
