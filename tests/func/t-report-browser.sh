# The report in a real browser: Debian's chromium, headless, on the small, hostile and large
# fixtures. Checks that the page's script ran (it marks <html data-report="ready"> and sorts the
# tables on load), that the sections and candidates are in the DOM, that no Content Security
# Policy violation or uncaught script error was logged, that the hostile fixture added no
# element or attribute of its own, and takes a screenshot at laptop width (1366x900).
# Without chromium the test fails: the report's promise is what a browser shows.
. "$(dirname "$0")/lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
	nok "chromium is not installed: run 'make deps' (Debian package chromium) or set CHROMIUM"
	exit 0
fi
fx=$top/tests/report
# browse NAME MODE OUT: runs chromium on $tmp/NAME/report.html with a fresh profile, under 20 s;
# MODE is dump (DOM to OUT) or shot (PNG to OUT); the log goes to OUT.log.
browse() {
	prof=$(mktemp -d "$tmp/prof.XXXXXX")
	case $2 in
	dump) what=--dump-dom ;;
	shot) what="--screenshot=$3" ;;
	esac
	timeout 20 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$prof" --enable-logging=stderr --v=0 --window-size=1366,900 \
		$what "file://$tmp/$1/report.html" >"$3.dom" 2>"$3.log"
	rc=$?
	[ "$2" = dump ] && mv "$3.dom" "$3"
	return $rc
}
clean_log() { # no CSP violation, no uncaught error
	! grep -Eq 'Content Security Policy|Content-Security-Policy|Uncaught|SyntaxError' "$1"
}
for name in small hostile; do
	mkdir -p "$tmp/$name" && cp "$fx/$name.json" "$tmp/$name/summary.json"
done
cp "$fx/train.py" "$tmp/small/"
python3 "$fx/gen-large.py" "$tmp/large.json" && mkdir -p "$tmp/large" && mv "$tmp/large.json" "$tmp/large/summary.json"
for name in small hostile large; do
	"$B/aicprof" report "$tmp/$name" >/dev/null || nok "aicprof report on the $name fixture"
done

browse small dump "$tmp/small.dom"
check "chromium dumps the small report's DOM" test -s "$tmp/small.dom"
check "the page's script ran (data-report=ready)" grep -q '<html lang="en" data-report="ready"' "$tmp/small.dom"
check "the kernel table was sorted on load" grep -q 'id="t-nodes" data-sort-init="3" data-sorted="3:descending"' "$tmp/small.dom"
check "the sorted column is marked" grep -q 'aria-sort="descending"' "$tmp/small.dom"
for s in overview candidates graph ledger sources timeline; do
	check "the DOM holds section $s" grep -q "<section id=\"$s\">" "$tmp/small.dom"
done
check "the DOM holds both candidates" sh -c "grep -q 'id=\"cand-1\"' '$tmp/small.dom' && grep -q 'id=\"cand-2\"' '$tmp/small.dom'"
check "the graph's viewBox was set by the zoom script" grep -Eq '<svg viewBox="[-0-9.]+ [-0-9.]+ [0-9.]+ [0-9.]+" ' "$tmp/small.dom"
check "no CSP violation or script error on the small report" clean_log "$tmp/small.dom.log"
[ -n "$VERBOSE" ] && grep -E 'CONSOLE|Content Security' "$tmp/small.dom.log" | head

browse small shot "$tmp/small.png"
check "a screenshot at 1366x900 is taken" sh -c "test -s '$tmp/small.png' && head -c 8 '$tmp/small.png' | od -c | grep -q 'P   N   G'"
check "no CSP violation or script error while rendering it" clean_log "$tmp/small.png.log"
[ -n "$AICPROF_SHOT" ] && cp "$tmp/small.png" "$AICPROF_SHOT"

browse hostile dump "$tmp/hostile.dom"
check "chromium dumps the hostile report's DOM" test -s "$tmp/hostile.dom"
check "the hostile report's script ran" grep -q 'data-report="ready"' "$tmp/hostile.dom"
check "no script from the data ran (no data-pwned attribute)" sh -c "! grep -q 'data-pwned=\"' '$tmp/hostile.dom'"
check "no element from the data was injected" sh -c "! grep -qi '<injected' '$tmp/hostile.dom'"
check "no img element from the data" sh -c "! grep -qi '<img' '$tmp/hostile.dom'"
check "the hostile names are shown as text" grep -q '&lt;injected-el&gt;' "$tmp/hostile.dom"
check "the page's style survived </style> in a name" grep -q '<style>:root' "$tmp/hostile.dom"
check "no CSP violation or script error on the hostile report" clean_log "$tmp/hostile.dom.log"

browse large dump "$tmp/large.dom"
check "the large report's script ran" grep -q 'data-report="ready"' "$tmp/large.dom"
# its 12 identical layers fold into one box: the whole step is drawn, folded, and shown first
check "the large report shows its folded drawing (one ×12 box)" grep -q '×12[^<]*(34 kernels each' "$tmp/large.dom"
check "the large report's drawing is not hidden" grep -q 'class="graphbox" id="g-all">' "$tmp/large.dom"
check "no CSP violation or script error on the large report" clean_log "$tmp/large.dom.log"
