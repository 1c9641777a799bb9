#!/usr/bin/env bash
# Run bench/product/gpu_check.py on a bare, lent NVIDIA machine that has Python with a
# CUDA torch, numpy, onnx, onnxruntime, opencv, psutil, pyyaml and
# nvidia-ml-py, but no network. What it lacks travels in .gpu/ (made here by
# bench/gpu_carry.sh, ignored by git): the ncnn and onnx2torch wheels, the
# pnnx binary (xz), the two models (xz), the calibration photos and the
# Vulkan loader (.deb). Results go to $OUT (default out/gpu_check).
#
#   bench/product/gpu_device.sh [gpu_check.py arguments]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out/gpu_check}
SITE=/tmp/edge_infer_site
HOME_DIR=/tmp/edge_infer_home
mkdir -p "$OUT" "$SITE" "$HOME_DIR/models" "$HOME_DIR/cache/photos"
PY=${PYTHON:-python3}
t0=$(date +%s)
$PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .gpu/whl/*.whl ||
  echo "gpu_device: wheels not installed (ncnn / onnx2torch candidates will say why)"
cp -r .gpu/site/. "$SITE"/
$PY - "$SITE" "$HOME_DIR" <<'EOF'
import lzma, pathlib, shutil, sys
site, home = map(pathlib.Path, sys.argv[1:])
for xz in pathlib.Path('.gpu/models').glob('*.xz'):
    (home / 'models' / xz.stem).write_bytes(lzma.decompress(xz.read_bytes()))
for lic in pathlib.Path('.gpu/models').glob('*.txt'):
    shutil.copy(lic, home / 'models')
pnnx = site / 'pnnx' / 'pnnx.xz'
if pnnx.is_file():
    (site / 'pnnx' / 'pnnx').write_bytes(lzma.decompress(pnnx.read_bytes()))
    (site / 'pnnx' / 'pnnx').chmod(0o755)
EOF
cp .gpu/photos/*.png "$HOME_DIR/cache/photos/" 2>/dev/null
# the Vulkan loader and the GL vendor-neutral dispatch libraries the NVIDIA
# Vulkan driver (libGLX_nvidia) needs
for f in .gpu/deb/*.deb; do dpkg -x "$f" /; done
ldconfig
nv=/usr/local/nvidia/share
if [ -f $nv/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ]; then
  export VK_DRIVER_FILES=$nv/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/glvnd/egl_vendor.d/10_nvidia.json
fi
echo "gpu_device: Vulkan ICD ${VK_DRIVER_FILES:-none}: $(cat "${VK_DRIVER_FILES:-/dev/null}" 2>&1 | tr -d '\n ' | head -c 300)"
export PYTHONPATH=$PWD/edge_infer:$PWD/bench:$SITE EDGE_INFER_HOME=$HOME_DIR
export PYTHONUNBUFFERED=1
echo "gpu_device: unpacked in $(( $(date +%s) - t0 )) s; $(nvidia-smi -L 2>&1 | head -n 1)"
$PY bench/product/gpu_check.py --out "$OUT" "$@"
