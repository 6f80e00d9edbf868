#!/usr/bin/env bash
# Replaces the Swagger UI assets the server embeds for /docs with those of the newest (or the
# given) swagger-ui-dist release on the npm registry: `bash server/assets/swagger-ui/update.sh
# [VERSION]`. Commit the result: the build never downloads anything.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack "swagger-ui-dist@${1:-latest}" >/dev/null
tar xzf swagger-ui-dist-*.tgz
for file in swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE; do
  cp "package/$file" "$here/$file"
done
grep '"version"' package/package.json | tr -d ' ,' | sed 's/"version":/swagger-ui-dist /; s/"//g' > "$here/VERSION"
cat "$here/VERSION"
