#!/usr/bin/env bash
# Install the Debian packages search_engine needs to build and test.
# Idempotent; run as root (CI and sessions are root).
set -euo pipefail
PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libzstd-dev
      postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl postgresql-15-cron
      libipc-run-perl build-essential python3
      etcd-server etcd-client libcurl4-openssl-dev
      iproute2 nftables
      libmicrohttpd-dev libgnutls28-dev zlib1g-dev curl openssl
      libcbor-dev
      libcbor-xs-perl
      python3-elasticsearch elasticsearch-curator rsyslog-elasticsearch
      prometheus-elasticsearch-exporter)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node.js for the official Node client's test (TAP 331): Debian's nodejs and
# npm unless a node with npm is there already (another packaging of it)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends nodejs npm >/dev/null
fi
# the client it drives, at the version package-lock.json pins
cd "$(dirname "$0")/clients"
[ -d node_modules/@elastic/elasticsearch ] || npm ci --no-audit --no-fund --loglevel=error >/dev/null
