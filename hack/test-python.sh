#!/usr/bin/env bash
# Tests the Python SDK as users get it: builds the wheel from python/,
# installs it into a fresh virtual environment and runs pytest there.
#
#   hack/test-python.sh [unit|e2e] [pytest arguments...]
#
# unit (the default, `make test-python`) also type-checks the package (mypy
# --strict). e2e needs a running cluster and is run by test/e2e
# (TestPythonSDK) against the suite's local cluster.
#
# The pinned dependencies (python/requirements.txt) are installed once into
# ~/.cache/paddlejob/python-sdk/ (go run ./hack/paddleruntime -name python-sdk); the fresh venv sees
# them through a .pth file, so only the wheel is installed each time.
# $PADDLEJOB_BIN names the paddlejob CLI the tests run; it is built when unset.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:-unit}
shift || true
case "$suite" in
unit | e2e) ;;
*) echo "usage: $0 [unit|e2e] [pytest arguments...]" >&2; exit 2 ;;
esac

deps=$(cd "$repo" && go run ./hack/paddleruntime -name python-sdk -requirements python/requirements.txt)
work=$(mktemp -d "${TMPDIR:-/tmp}/paddlejob-python.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
mkdir "$work/src"
tar -C "$repo/python" --exclude=__pycache__ --exclude='*.egg-info' --exclude=build --exclude=dist -cf - . | tar -C "$work/src" -xf -
"$deps/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/paddlejob-*.whl)
echo "built $(basename "$wheel")"

# A fresh venv from the interpreter the dependencies were installed with.
base=$("$deps/bin/python" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$work/venv"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
purelib "$deps/bin/python" >"$(purelib "$work/venv/bin/python")/paddlejob-test-deps.pth"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index "$wheel"
"$work/venv/bin/python" -m pip check --disable-pip-version-check

if [ "$suite" = unit ]; then
	(cd "$repo/python" && "$deps/bin/python" -m mypy --cache-dir "$work/mypy-cache")
fi
if [ -z "${PADDLEJOB_BIN:-}" ]; then
	(cd "$repo" && go build -o "$work/bin/" ./cmd/paddlejob ./cmd/paddlejob-launch)
	export PADDLEJOB_BIN="$work/bin/paddlejob"
fi

# From outside the sources: the tests import the installed wheel.
cd "$work"
"$work/venv/bin/python" -c 'import paddlejob, sys; assert "site-packages" in paddlejob.__file__, paddlejob.__file__; print("testing", paddlejob.__file__)'
"$work/venv/bin/python" -m pytest -p no:cacheprovider --rootdir "$repo/python" "$repo/python/tests/$suite" "$@"
