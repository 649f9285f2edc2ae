#!/bin/bash
# Installs the npm packages the tests use (the JSON Schema validator of the
# audit stream, tools/validate-events.js) into build/npm, with the machine's
# node and npm (tools/deps.sh installs Debian's nodejs and npm, then runs
# this). Quick and silent when they are there. NPM_PREFIX overrides the
# directory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${NPM_PREFIX:-$ROOT/build/npm}
# name@version, pinned: the versions the schema is tested with.
PACKAGES=(ajv@8.20.0 ajv-formats@3.0.1)

# have NAME@VERSION: the package is installed at that version.
have() {
	local name=${1%@*} version=${1##*@} pj
	pj=$PREFIX/node_modules/$name/package.json
	[ -r "$pj" ] && grep -q "\"version\": *\"$version\"" "$pj"
}

missing=()
for p in "${PACKAGES[@]}"; do
	have "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "npm-deps: node and npm are missing; run 'make deps' as root" >&2
	exit 1
fi
echo "npm-deps: installing ${missing[*]} into ${PREFIX#"$ROOT"/}"
mkdir -p "$PREFIX"
# A package.json of our own keeps npm from walking up to another project.
[ -e "$PREFIX/package.json" ] ||
	printf '{"name":"bpfbox-test-deps","private":true}\n' >"$PREFIX/package.json"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --save-exact \
	"${PACKAGES[@]}" >/dev/null
for p in "${PACKAGES[@]}"; do
	have "$p" || { echo "npm-deps: $p did not install" >&2; exit 1; }
done
