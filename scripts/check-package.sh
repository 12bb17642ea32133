#!/usr/bin/env bash
# The package as users install it: `npm pack`, installed into an empty prefix, then
# `loopgraph --version`, `loopgraph init` and the offline demo from an empty folder (CI runs it
# after the tests; it needs the npm registry for the dependencies the npm cache lacks).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
npm pack --silent --pack-destination "$work" >/dev/null
npm install --global --prefix "$work/prefix" --prefer-offline --no-audit --no-fund "$work"/loopgraph-*.tgz >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
mkdir "$work/empty"
cd "$work/empty"
export PATH="$work/prefix/bin:$PATH" XDG_CONFIG_HOME="$work/config"
unset LOOPGRAPH_DB LOOPGRAPH_MODEL OPENAI_API_KEY
echo "loopgraph --version: $(loopgraph --version)"
loopgraph init
loopgraph graphs validate graphs/starter.yaml
loopgraph demo >"$work/demo.log" 2>&1 || { cat "$work/demo.log"; exit 1; }
grep -q "loop ended: the function and its test are done" "$work/demo.log" || { echo "the demo did not finish its loop"; cat "$work/demo.log"; exit 1; }
test -f .loopgraph/loopgraph.db
echo "package check: installed from $(basename "$work"/loopgraph-*.tgz), init and the offline demo work from an empty folder"
