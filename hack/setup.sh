#!/usr/bin/env bash
# Installs the operating-system packages the project needs and checks the Go
# toolchain. Safe to run again: it installs only what is missing.
#   hack/setup.sh         what the local cluster needs (make demo)
#   hack/setup.sh tests   that and what the tests need too (.ci/run, make test)
#   bubblewrap   sandboxes the local cluster's pods (command bwrap)
#   python3-venv the Paddle runtime is a Python virtual environment
#                (internal/localcluster/paddleruntime installs PaddlePaddle into it with pip)
#   mmdebstrap   (tests) builds the container-runtime node's Debian base image
#                (internal/localcluster/runtimenode/images.go)
#   gcc, libseccomp-dev
#                (tests) runc, which that node runs, is built with cgo for its
#                seccomp filter (internal/localcluster/kubebin/noderuntime.go)
#   chromium     (tests) the headless browser the dashboard's end-to-end test drives
#                (test/e2e/dashboard_test.go, through chromedp); chromium-driver
#                comes with it for WebDriver tools
set -euo pipefail
case "${1:-}" in
"" | tests) ;;
*) echo "usage: $0 [tests]" >&2; exit 2 ;;
esac

need_go="1.26"
if ! command -v go >/dev/null 2>&1; then
  echo "setup: Go ${need_go}+ is required (https://go.dev/dl/)" >&2
  exit 1
fi

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if ! command -v python3 >/dev/null 2>&1; then
  missing+=(python3 python3-venv)
elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [ "${1:-}" = tests ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  command -v gcc >/dev/null 2>&1 || missing+=(gcc)
  [ -e /usr/include/seccomp.h ] || missing+=(libseccomp-dev)
fi

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: please install: ${missing[*]} (no apt-get here)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
echo "setup: ok ($(go version | cut -d' ' -f3), $(bwrap --version), $(python3 --version)${1:+, $(chromium --version 2>/dev/null | head -1)})"
