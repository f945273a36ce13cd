#!/bin/sh
# tests/gpu/lockstep.py, the overhead benchmark's instrument for a whole job (two jobs whose
# steps alternate, the paired difference a step), run here with bench_step.py's fake step:
# sleep plus a drift both jobs share (a sine of the wall clock, +-2 ms, period 0.25 s) plus the cost
# that B stands for. The drift moves each job's step by more than the cost; the paired
# difference must still give the cost, within its quartiles, in both phases, and a job that
# dies or hangs must end the run with exit status 1 in bounded time, both processes gone.
. "$(dirname "$0")/lib.sh"
L=$top/tests/gpu/lockstep.py
PY=$(command -v python3)
if [ -z "$PY" ]; then
	ok "lockstep: the paired difference through a drift # skip no python3"
	exit 0
fi
ls_run() { # name timeout args...: the JSON line to $tmp/NAME.json, the exit status to $tmp/NAME.rc
	n=$1 t=$2
	shift 2
	timeout "$t" "$PY" "$L" --what fake "$@" >"$tmp/$n.json" 2>"$tmp/$n.err"
	echo $? >"$tmp/$n.rc"
}
# field NAME EXPR: a Python expression of the run's JSON line (d), printed
field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$tmp/$1.json" 2>/dev/null; }

ls_run cost 60 --steps 160 --split 80 --a-env "BENCH_FAKE_DRIFT_MS=2" \
	--b-env "BENCH_FAKE_DRIFT_MS=2 BENCH_FAKE_EXTRA_MS=1"
sed 's/^/# /' "$tmp/cost.json"
check "lockstep: two fake jobs, 160 paired steps, exit 0 ($(cat "$tmp/cost.rc"))" \
	sh -c "[ $(cat "$tmp/cost.rc") = 0 ] && [ '$(field cost 'd["paired_steps"]')' = 160 ]"
for ph in 0 1; do
	got=$(field cost "'%.3f %.3f %.3f' % (d['phases'][$ph]['d_ms'], d['phases'][$ph]['d_p25'], d['phases'][$ph]['d_p75'])")
	check "lockstep phase $ph: B's 1 ms a step found through a 2 ms drift (median, p25, p75: ${got:-none})" \
		"$PY" -c "import sys; m, a, b = map(float, sys.argv[1:4]); sys.exit(not (0.6 < m < 1.4 and 0.3 < a <= m <= b < 1.7))" $got
done
# the drift is there: each job's own steps spread by more than the paired differences do
for ph in 0 1; do
	got=$(field cost "'%.3f %.3f' % (d['phases'][$ph]['a_p75'] - d['phases'][$ph]['a_p25'], d['phases'][$ph]['d_p75'] - d['phases'][$ph]['d_p25'])")
	check "lockstep phase $ph: A's own steps spread by the drift, the pairs' differences less (IQRs: ${got:-none})" \
		"$PY" -c "import sys; a, d = map(float, sys.argv[1:3]); sys.exit(not (a >= 0.3 and a > d))" $got
done
ls_run zero 60 --steps 100 --split 50 --a-env "BENCH_FAKE_DRIFT_MS=2" --b-env "BENCH_FAKE_DRIFT_MS=2"
got=$(field zero "d['phases'][1]['d_ms']")
check "lockstep: no cost, no difference (median ${got:-none} ms)" \
	"$PY" -c "import sys; sys.exit(not abs(float(sys.argv[1])) < 0.3)" "${got:-9}"

ls_run die 60 --steps 50 --b-env "BENCH_FAKE_DIE_AT=5"
check "lockstep: B dies at its step 5: exit 1, the error names it, 5 pairs kept" \
	sh -c "[ $(cat "$tmp/die.rc") = 1 ] && [ '$(field die 'd["b_rc"]')' = 3 ] && [ '$(field die 'd["paired_steps"]')' = 5 ] && grep -q 'shim gave no step 5' '$tmp/die.json'"
ls_run hang 30 --steps 20 --timeout 2 --b-env "BENCH_FAKE_MS=20000"
check "lockstep: B hangs: exit 1 within its --timeout, not the test's (rc $(cat "$tmp/hang.rc"))" \
	sh -c "[ $(cat "$tmp/hang.rc") = 1 ] && grep -q '\"error\"' '$tmp/hang.json'"
sleep 0.2
check "lockstep: no fake job left running" sh -c "! pgrep -f 'bench_step[.]py lockstep fake' >/dev/null"
