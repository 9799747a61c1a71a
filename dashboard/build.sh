#!/usr/bin/env bash
# Rebuild the dashboard's committed assets (dashboard/dist/) from source.
# CI runs this and then `git diff --exit-code dashboard/dist` to prove the build is current.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
