#!/usr/bin/env bash
# The README's first command: install packages, build, install, and run the
# main job (a real bulk load through a throwaway tserver) with its figures.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
make
make install
bench/tserver_load.sh "$@"
