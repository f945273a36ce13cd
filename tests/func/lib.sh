# Helpers for functional tests (sourced). Each check prints one TAP line.
top=${AICPROF_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$top/build
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; }
check() { # description, command...
	d=$1; shift
	if "$@"; then ok "$d"; else nok "$d"; fi
}
# nvcc for the tests that compile generated CUDA (CUDA_HOME's, else PATH's); empty when none
NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$NVCC" ] || NVCC=$(command -v nvcc)
