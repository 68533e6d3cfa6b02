#!/usr/bin/env bash
# Install the Debian packages search_engine needs to build and test.
# Idempotent; run as root (CI and sessions are root).
set -euo pipefail
PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libzstd-dev
      postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl postgresql-15-cron
      libipc-run-perl build-essential python3
      etcd-server etcd-client libcurl4-openssl-dev
      iproute2 nftables
      libmicrohttpd-dev zlib1g-dev curl openssl)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
