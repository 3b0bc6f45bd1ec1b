#!/usr/bin/env bash
# The Debian package, end to end on this machine (as root): build it with cargo-deb, check its
# systemd units (`systemd-analyze verify`, and `security` at most 2.0), install it with dpkg,
# run the installed binary as the installed user against the installed config (/healthz, a
# license created and verified, an online backup, `check`), then remove it (data kept) and
# purge it (config and user gone, data still kept); then the same under systemd in a container
# (.ci/deb-systemd.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  if [ "${CI:-}" = true ]; then
    echo "deb: installing the package needs root" >&2
    exit 1
  fi
  echo "deb: skipped (installing the package needs root)"
  exit 0
fi

need=()
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v adduser >/dev/null 2>&1 || need+=(adduser)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

tools="$PWD/target/ci-tools"
if [ ! -x "$tools/bin/cargo-deb" ]; then
  cargo install --quiet --locked --root "$tools" cargo-deb@3.8.0
fi

echo "-- cargo deb -p licensing-server"
rm -f target/debian/licensing-server_*.deb
"$tools/bin/cargo-deb" -p licensing-server
deb=$(ls target/debian/licensing-server_*.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
dpkg-deb --contents "$deb"

# A package left by an earlier run on this machine goes first.
dpkg -P licensing-server >/dev/null 2>&1 || true
rm -rf /var/lib/licensing-server /var/lib/licensing-server-backups

echo "-- dpkg -i"
dpkg -i "$deb"
unit=/lib/systemd/system/licensing-server.service
test -x /usr/bin/licensing-server
test -f "$unit"
test -f /lib/systemd/system/licensing-server-backup.service
test -f /lib/systemd/system/licensing-server-backup.timer
getent passwd licensing >/dev/null
[ "$(stat -c '%a %U' /var/lib/licensing-server)" = "700 licensing" ]
[ "$(stat -c '%a %U %G' /etc/licensing-server/server.toml)" = "640 root licensing" ]
/usr/bin/licensing-server --version

echo "-- systemd-analyze"
systemd-analyze verify "$unit" /lib/systemd/system/licensing-server-backup.service \
  /lib/systemd/system/licensing-server-backup.timer
security=$(systemd-analyze security --offline=true --no-pager "$unit")
echo "$security" | tail -1
score=$(echo "$security" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }' \
  || { echo "systemd-analyze security rates the unit $score, above 2.0" >&2; exit 1; }

echo "-- the installed server, as its user, on its config"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
base="http://127.0.0.1:$port"
log=$(mktemp)
runuser -u licensing -- env LICENSING_LISTEN="127.0.0.1:$port" LICENSING_ADMIN_TOKEN="$token" \
  /usr/bin/licensing-server --config /etc/licensing-server/server.toml >"$log" 2>&1 &
pid=$!
stop() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap 'stop; cat "$log"; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
  curl -sf "$base/healthz" >/dev/null && break
  sleep 0.2
done
curl -sf "$base/healthz"
echo
credentials=/var/lib/licensing-server/first-start-credentials.txt
[ "$(stat -c '%a %U' "$credentials")" = "600 licensing" ]
team=$(sed -n 's/^ *team id: *//p' "$credentials")
key=$(sed -n 's/^ *API key: *\([^ ]*\).*/\1/p' "$credentials")
license=$(curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"expirationType":"NEVER"}' "$base/api/v1/dev/teams/$team/licenses" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["licenseKey"])')
verified=$(curl -sf -X POST -H 'Content-Type: application/json' \
  -d "{\"licenseKey\":\"$license\",\"hardwareIdentifier\":\"deb-test-device\"}" \
  "$base/api/v1/client/teams/$team/verification/verify")
echo "$verified" | python3 -c 'import json, sys; a = json.load(sys.stdin); assert a["result"]["code"] == "VALID", a'
runuser -u licensing -- env LICENSING_ADMIN_TOKEN="$token" /usr/bin/licensing-server backup \
  --config /etc/licensing-server/server.toml --url "$base" \
  --to-dir /var/lib/licensing-server-backups --keep 7
ls /var/lib/licensing-server-backups/licensing-backup-*.jsonl
stop
trap - EXIT
rm -f "$log"
runuser -u licensing -- /usr/bin/licensing-server check --data-dir /var/lib/licensing-server

echo "-- dpkg -r keeps the data and the config"
dpkg -r licensing-server
test ! -e /usr/bin/licensing-server
test -f /var/lib/licensing-server/db/conf
test -f /etc/licensing-server/server.toml

echo "-- dpkg -P removes the config and the user, keeps the data"
dpkg -P licensing-server
test ! -e /etc/licensing-server/server.toml
if getent passwd licensing >/dev/null; then echo "the user outlived the purge" >&2; exit 1; fi
test -f /var/lib/licensing-server/db/conf
rm -rf /var/lib/licensing-server /var/lib/licensing-server-backups

echo "-- the same package under systemd, in a container"
bash .ci/deb-systemd.sh "$deb"
echo "deb: ok (systemd-analyze security: $score)"
