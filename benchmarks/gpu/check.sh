#!/usr/bin/env bash
# GPU check for canter's device=cuda support, for a machine with a GPU and PyTorch but no network:
# wheels of gymnasium, farama-notifications (and optionally ale-py, pettingzoo) for its Python, downloaded
# beforehand into .gpuwheels/ at the repository root (`pip download --only-binary=:all: --python-version 3.12
# --platform manylinux_2_28_x86_64 --no-deps -d .gpuwheels gymnasium farama-notifications ale-py pettingzoo`),
# are installed into /tmp/gw; then tests/test_cuda.py runs on the GPU. Output also goes to $OUT (default /tmp).
# Usage: bash benchmarks/gpu/check.sh [pytest args]
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
{ nvidia-smi -L; python3 -V; uname -m; nproc; } 2>&1 | tee "$OUT/env.txt"
rm -rf /tmp/gw; for w in .gpuwheels/*.whl; do python3 -m pip install -q --no-deps --no-index --target /tmp/gw "$w" 2>&1 | tail -2 || true; done
export PYTHONPATH=$PWD:/tmp/gw WANDB_MODE=offline WANDB_SILENT=true MPLBACKEND=Agg SDL_VIDEODRIVER=dummy
python3 -c "import torch, gymnasium, canter; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'gym', gymnasium.__version__)" 2>&1 | tee -a "$OUT/env.txt"
T0=$(date +%s)
timeout "${PYTEST_LIMIT:-360}" python3 -m pytest -q -p no:cacheprovider -rfEs --durations=15 tests/test_cuda.py "$@" 2>&1 | tee "$OUT/pytest.txt" | tail -60
echo "pytest wall $(( $(date +%s) - T0 )) s" | tee -a "$OUT/pytest.txt"
