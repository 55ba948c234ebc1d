#!/usr/bin/env bash
# Installs Debian's Docker engine when missing and starts dockerd in the background.
set -euo pipefail
if ! command -v dockerd >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi
if docker info >/dev/null 2>&1; then
  exit 0
fi
mkdir -p /var/log
nohup dockerd >/var/log/tqdeploy-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "dockerd is up"
    exit 0
  fi
  sleep 1
done
echo "dockerd did not come up; see /var/log/tqdeploy-dockerd.log" >&2
tail -n 20 /var/log/tqdeploy-dockerd.log >&2 || true
exit 1
