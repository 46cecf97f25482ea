#!/bin/sh
# What a session lent a GPU machine runs there (the device tool, README
# "A GPU, sometimes"): the real-CUDA tests and bench_load.py's rows at the
# issue's model size, with the library built here carried over.
#   run: sh bench/gpu_check.sh   (carry: build/libztensor.so*, nothing else)
# Writes $OUT/bench_load.json and $OUT/report.md when $OUT is set.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
lib=$(ls "$root"/build/libztensor.so.1.* | head -n 1)
export ZTENSOR_LIBRARY="$lib" PYTHONPATH="$root/bindings/python" PYTHONDONTWRITEBYTECODE=1
out=${OUT:-$(mktemp -d)}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), sys.version.split()[0])"
python3 -m pytest -q -p no:cacheprovider -rs "$root/bindings/python/tests/test_torch_load.py" \
  "$root/bindings/python/tests/test_dlpack.py"
ZT_LOAD_SCALE=${ZT_LOAD_SCALE:-1} ZT_BENCH_DIR=${ZT_BENCH_DIR:-/tmp/zt-bench} \
  python3 "$root/bench/bench_load.py" "$out/bench_load.json" "${ZT_REPS:-3}"
python3 "$root/bench/report.py" "$out" > "$out/report.md" 2>&1 || true
grep '| load' "$out/report.md" || true
