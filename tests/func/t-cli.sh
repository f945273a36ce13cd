# The aicprof command: help, version, unknown commands, record's errors.
. "$(dirname "$0")/lib.sh"
check "--version prints the version" sh -c "'$B/aicprof' --version | grep -q '^aicprof [0-9]'"
check "--help lists record" sh -c "'$B/aicprof' --help | grep -q 'record'"
"$B/aicprof" no-such-command 2>"$tmp/err"; rc=$?
check "unknown command exits 129" test "$rc" = 129
check "unknown command names itself" grep -q "'no-such-command' is not an aicprof command" "$tmp/err"
"$B/aicprof" record 2>"$tmp/err"; rc=$?
check "record without a program exits 129" test "$rc" = 129
"$B/aicprof" record -- /bin/sh -c 'exit 7'; rc=$?
check "record passes the program's exit code through" test "$rc" = 7
"$B/aicprof" record -- /no/such/program 2>"$tmp/err"; rc=$?
check "record of a missing program exits 127" test "$rc" = 127
