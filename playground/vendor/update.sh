#!/usr/bin/env bash
# Refreshes the vendored @bjorn3/browser_wasi_shim (MIT or Apache-2.0) from
# the version pinned in playground/package-lock.json:
#   cd playground && npm ci && vendor/update.sh
# The page loads vendor/browser_wasi_shim/index.js; `go build` embeds the
# vendored files, so a clean clone builds without npm. The Node tests check
# that the vendored files equal the pinned package's dist/ when it is
# installed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=node_modules/@bjorn3/browser_wasi_shim
[ -d "$src/dist" ] || { echo "run npm ci in playground/ first" >&2; exit 1; }
dst=vendor/browser_wasi_shim
rm -rf "$dst" && mkdir -p "$dst"
cp "$src"/dist/*.js "$dst"/
cp "$src"/LICENSE-MIT "$src"/LICENSE-APACHE "$dst"/
echo "vendored $(node -p "require('./$src/package.json').version") into $dst"
