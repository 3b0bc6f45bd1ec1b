#!/usr/bin/env bash
# The Debian package under a real systemd: a throw-away Debian root (debootstrap) booted with
# systemd-nspawn, the package installed there, and the service checked as systemd runs it, with
# its hardening: it starts on install, writes the first team's credentials, answers a verify,
# takes a backup through licensing-server-backup.service once admin-token is set, stops
# gracefully (exit status 0), and goes with `dpkg -r` / `dpkg -P` as the README says.
#
# Usage: .ci/deb-systemd.sh PACKAGE.deb (as root; .ci/deb.sh calls it). Where this machine cannot
# boot a container (no systemd-nspawn support in its sandbox), it says so and stops: .ci/deb.sh
# has already installed and run the package on the machine itself.
#
# .ci/deb-systemd.sh --prepare only makes the Debian root (mostly downloads), so that .ci/run can
# do it in the background while the tests build and run; the run with a package then takes that
# root (waiting for it if it is still being made), or makes its own when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v systemd-nspawn >/dev/null 2>&1 || need+=(systemd-container)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "${need[@]}" >/dev/null
fi

mkdir -p target
root="$PWD/target/deb-systemd-root"
# A root is ready to use once made in full, and used once: the mark goes when a run takes it.
ready="$root.ready"
# Held while a root is made, so that a run waits for the one made in the background.
exec 9>"$root.lock"
flock 9
make_root() {
  local suite
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  rm -rf "$root" "$ready"
  echo "-- debootstrap $suite into $root"
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,adduser,curl \
    "$suite" "$root" http://deb.debian.org/debian >"$root.log" 2>&1 \
    || { tail -20 "$root.log"; exit 1; }
}

if [ "${1:-}" = --prepare ]; then
  make_root
  touch "$ready"
  exit 0
fi

deb=$(realpath "$1")
if [ -f "$ready" ]; then
  echo "-- the Debian root made beside the tests: $root"
  rm -f "$ready"
else
  make_root
fi
flock -u 9
cp "$deb" "$root/root/licensing-server.deb"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The port, in a drop-in made before the package arrives (the environment wins over the file).
mkdir -p "$root/etc/systemd/system/licensing-server.service.d"
printf '[Service]\nEnvironment=LICENSING_LISTEN=127.0.0.1:%s\n' "$port" \
  >"$root/etc/systemd/system/licensing-server.service.d/ci-port.conf"

echo "-- boot it with systemd-nspawn"
boot_log="$root.boot.log"
systemd-nspawn -D "$root" --boot --console=pipe --register=no --keep-unit \
  --machine=licensing-ci >"$boot_log" 2>&1 &
nspawn=$!
shutdown() {
  kill "$nspawn" 2>/dev/null || true
  wait "$nspawn" 2>/dev/null || true
  rm -rf "$root"
}
trap shutdown EXIT
# The container's init: the systemd that nspawn started.
init=""
for _ in $(seq 1 150); do
  for p in $(pgrep -P "$nspawn" || true); do
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ]; then
      init=$p
    fi
  done
  [ -n "$init" ] && break
  sleep 0.2
done
state=""
if [ -n "$init" ]; then
  # Until systemd in the container has its bus, systemctl cannot ask it anything.
  for _ in $(seq 1 300); do
    state=$(nsenter -t "$init" -a systemctl is-system-running 2>/dev/null || true)
    [ -n "$state" ] && break
    sleep 0.2
  done
  if [ -n "$state" ]; then
    state=$(timeout 90 nsenter -t "$init" -a systemctl is-system-running --wait || true)
  fi
fi
if [ "$state" != running ] && [ "$state" != degraded ]; then
  echo "deb-systemd: notice: this machine could not boot systemd in a container (init '${init:-none}', state '${state:-none}'):"
  tail -5 "$boot_log"
  echo "deb-systemd: the package was installed and run on the machine itself by .ci/deb.sh"
  exit 0
fi
echo "container booted ($state)"
inside() { nsenter -t "$init" -a /bin/bash -c "$1"; }

inside "$(cat <<EOF
set -euo pipefail
trap 'journalctl -u licensing-server --no-pager | tail -20; systemctl status licensing-server --no-pager | tail -8' ERR
base=http://127.0.0.1:$port
# As the README says: apt installs the package and what it depends on (ca-certificates).
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /root/licensing-server.deb
for _ in \$(seq 1 100); do curl -sf \$base/healthz >/dev/null && break; sleep 0.2; done
systemctl is-active licensing-server
curl -sf \$base/healthz; echo
credentials=/var/lib/licensing-server/first-start-credentials.txt
[ "\$(stat -c '%a %U' \$credentials)" = "600 licensing" ]
[ "\$(stat -c '%a %U' /var/lib/licensing-server)" = "700 licensing" ]
team=\$(sed -n 's/^ *team id: *//p' \$credentials)
key=\$(sed -n 's/^ *API key: *\([^ ]*\).*/\1/p' \$credentials)
license=\$(curl -sf -X POST -H "Authorization: Bearer \$key" -H 'Content-Type: application/json' \
  -d '{"expirationType":"NEVER"}' \$base/api/v1/dev/teams/\$team/licenses \
  | sed -n 's/.*"licenseKey":"\([A-Z0-9-]*\)".*/\1/p')
curl -sf -X POST -H 'Content-Type: application/json' \
  -d "{\"licenseKey\":\"\$license\",\"hardwareIdentifier\":\"systemd-device\"}" \
  \$base/api/v1/client/teams/\$team/verification/verify | grep -q '"code":"VALID"'
echo "verify: VALID"

# Backups as the README says: admin-token in the config, restart, the timer on.
token=\$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
sed -i "s/^# admin-token = \"\"/admin-token = \"\$token\"/" /etc/licensing-server/server.toml
grep -q '^admin-token' /etc/licensing-server/server.toml
systemctl restart licensing-server
for _ in \$(seq 1 100); do curl -sf \$base/healthz >/dev/null && break; sleep 0.2; done
systemctl enable --now licensing-server-backup.timer
systemctl is-active licensing-server-backup.timer
# The backup service reaches the server at the config file's listen address; here the port
# comes from the drop-in, so the service gets it the same way.
mkdir -p /etc/systemd/system/licensing-server-backup.service.d
printf '[Service]\nEnvironment=LICENSING_BACKUP_URL=%s\n' "\$base" \
  >/etc/systemd/system/licensing-server-backup.service.d/ci-url.conf
systemctl daemon-reload
systemctl start licensing-server-backup.service
ls /var/lib/licensing-server-backups/licensing-backup-*.jsonl
tail -c 200 /var/lib/licensing-server-backups/licensing-backup-*.jsonl | grep -q '"kind":"trailer"'

score=\$(systemd-analyze security --no-pager licensing-server | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
echo "systemd-analyze security (running unit): \$score"
awk -v s="\$score" 'BEGIN { exit !(s != "" && s <= 2.0) }'

systemctl stop licensing-server
[ "\$(systemctl show licensing-server -p Result --value)" = success ]
[ "\$(systemctl show licensing-server -p ExecMainStatus --value)" = 0 ]
journalctl -u licensing-server --no-pager | grep -q 'licensing_server: stopped'
echo "graceful stop: status 0"

dpkg -r licensing-server
test -d /var/lib/licensing-server/db
dpkg -P licensing-server
if getent passwd licensing >/dev/null; then echo "the user outlived the purge" >&2; exit 1; fi
test ! -e /etc/licensing-server
test -d /var/lib/licensing-server/db
EOF
)"
echo "deb-systemd: ok (under systemd $(inside 'systemctl --version | head -1 | cut -d" " -f2'))"
