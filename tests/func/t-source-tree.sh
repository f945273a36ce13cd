# The report embeds source lines only from the program's tree (report/source.c): a trace whose
# cwd is "/" or a home directory, or whose sites name /etc/passwd or files under ~/.ssh, makes the
# report show none of those files' lines; the same trace with cwd the project embeds the line
# (the control). HOME is a scratch home so the rule about homes is exercised without the real one.
. "$(dirname "$0")/lib.sh"
A=$B/aicprof
S=$top/samples/traces/mlp_train.aicp.jsonl
h=$tmp/h/home
mkdir -p "$h/.ssh" "$h/proj/samples" "$tmp/an" "$tmp/sys"
sed 's/\(nn.functional.gelu(h)\)$/\1  # HOME-SECRET/' "$top/samples/mlp_train.py" >"$h/proj/samples/mlp_train.py"
cp "$h/proj/samples/mlp_train.py" "$h/.ssh/keys.py"
cp "$h/proj/samples/mlp_train.py" "$h/notes.py"
check "the victims carry the marker" grep -q 'HOME-SECRET' "$h/.ssh/keys.py"
# derive NAME CWD FILE: the MLP sample with the header's cwd CWD and the user's file renamed FILE
derive() {
	python3 - "$S" "$tmp/$1.aicp.jsonl" "$2" "$3" <<'PY'
import json, sys
src, dst, cwd, name = sys.argv[1:]
with open(dst, "w") as out:
    for line in open(src):
        r = json.loads(line)
        if r["t"] == "header":
            r["cwd"] = cwd
        if r["t"] == "site":
            for f in r.get("frames", []):
                if f["file"] == "samples/mlp_train.py":
                    f["file"] = name
        out.write(json.dumps(r, separators=(",", ":")) + "\n")
PY
}
rel=${h#/}
derive root-passwd / /etc/passwd
derive root-passwd-rel / etc/passwd
derive root-ssh / "$h/.ssh/keys.py"
derive root-ssh-rel / "$rel/.ssh/keys.py"
derive root-home / "$h/notes.py"
derive root-home-rel / "$rel/notes.py"
derive home-rel "$h" notes.py
derive home-ssh "$h" .ssh/keys.py
derive proj-ssh "$h/proj" ../.ssh/keys.py
derive etc /etc passwd
derive inside "$h/proj" samples/mlp_train.py
for n in root-passwd root-passwd-rel root-ssh root-ssh-rel root-home root-home-rel home-rel home-ssh proj-ssh etc inside; do
	(cd "$tmp/an" && HOME=$h "$A" analyze -q "../$n.aicp.jsonl" -o "../out-$n" >/dev/null 2>"$tmp/$n.err")
	rc=$?
	check "$n: analyze and report exit 0 ($rc)" test "$rc" = 0 -a -s "$tmp/out-$n/report.html"
	[ $n = inside ] && continue
	check "$n: the report embeds no line of the file" sh -c \
		"! grep -qE 'HOME-SECRET|root:x?:0:0' '$tmp/out-$n/report.html'"
done
check "inside (control): the project's own line is embedded" grep -q 'HOME-SECRET' "$tmp/out-inside/report.html"
# the report run from the home itself: '.' is the home, not a tree either
(cd "$h" && HOME=$h "$A" report "$tmp/out-home-rel" >/dev/null 2>&1)
check "report run from the home: nothing of it embedded" sh -c "! grep -q 'HOME-SECRET' '$tmp/out-home-rel/report.html'"
# a link in the project to the home's .ssh: the real path is resolved
ln -s "$h/.ssh" "$h/proj/keys"
derive link "$h/proj" keys/keys.py
(cd "$tmp/an" && HOME=$h "$A" analyze -q ../link.aicp.jsonl -o ../out-link >/dev/null 2>&1)
check "link: a link inside the project to ~/.ssh embeds nothing" sh -c \
	"test -s '$tmp/out-link/report.html' && ! grep -q 'HOME-SECRET' '$tmp/out-link/report.html'"
