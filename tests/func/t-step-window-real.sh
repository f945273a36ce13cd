#!/bin/sh
# The step window over the sample traces' own op sequences (programs we did not write among
# them: transformers' GPT-2 and Llama, torchvision's ResNet, timm's ViT, a JAX step, a CuPy
# loop), each made as long as a training job (tests/tools/stepwin-sim.py): the window must close,
# not before 100 steps after the program's set-up (JAX's compilation and autotuning included),
# and on the trace's step, not a layer of it.
. "$(dirname "$0")/lib.sh"
[ -x "$B/tools/stepwin-sim" ] || { nok "build/tools/stepwin-sim is built (make tools)"; exit 0; }
python3 "$top/tests/tools/stepwin-sim.py" 2>"$tmp/err" | grep -E '^(ok|not ok)'
[ -s "$tmp/err" ] && grep -v warning "$tmp/err" | head -5 | sed 's/^/# /'
exit 0
