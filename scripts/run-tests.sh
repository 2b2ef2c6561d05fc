#!/bin/sh
# Run every test binary given; fail if any failed, after running them all.
#
# A test that skips says so to this script: it appends a line
# "N<TAB>PACKAGES<TAB>WHY" to the file named by $FB_SKIPS (fb_test_skipped,
# tests/fbproc.c). The closing line counts the skipped tests and names the
# Debian packages that would run them:
#
#   binaries: 24 passed, 0 failed, 31 tests skipped: apt-get install -y redis-server to run them
# A binary that hangs fails alone instead of holding the run: it is stopped
# after FB_TEST_LIMIT seconds (the slowest takes a few minutes under TSan).
limit=${FB_TEST_LIMIT:-900}
failed=0
ran=0
skips=$(mktemp "${TMPDIR:-/tmp}/fb-skips.XXXXXX") || exit 3
FB_SKIPS=$skips.one
export FB_SKIPS
trap 'rm -f "$skips" "$FB_SKIPS"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for t in "$@"; do
	name=$(basename "$t")
	echo "== $name"
	: >"$FB_SKIPS"
	if timeout --kill-after=10 "$limit" "$t"; then :; else
		rc=$?
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			echo "FAILED: $name (hung: stopped after ${limit} s)"
		else
			echo "FAILED: $name (exit $rc)"
		fi
		failed=$((failed + 1))
	fi
	ran=$((ran + 1))
	# each record with the binary it came from: BINARY N PACKAGES WHY
	awk -v b="$name" '{ print b "\t" $0 }' "$FB_SKIPS" >>"$skips"
done
skipped=$(awk -F'\t' '{ n += $2 } END { print n + 0 }' "$skips")
pkgs=$(awk -F'\t' '$3 != "-" { print $3 }' "$skips" | tr ' ' '\n' | sort -u | tr '\n' ' ')
pkgs=${pkgs% }
echo
if [ "$skipped" -gt 0 ]; then
	echo "skipped:"
	# the same reason in one binary on one line, in the order they came
	awk -F'\t' '{ k = $1 FS $3 FS $4; if (!(k in n)) order[++m] = k; n[k] += $2 }
	     END { for (i = 1; i <= m; i++) { split(order[i], f, FS)
	           printf "  %3d %s: %s%s\n", n[order[i]], f[1], f[3], f[2] == "-" ? "" : " (" f[2] ")" } }' \
		"$skips"
fi
tests=tests
[ "$skipped" = 1 ] && tests=test
line="binaries: $((ran - failed)) passed, $failed failed, $skipped $tests skipped"
if [ -n "$pkgs" ]; then
	line="$line: apt-get install -y $pkgs to run them"
	others=$(awk -F'\t' '$3 == "-" { n += $2 } END { print n + 0 }' "$skips")
	[ "$others" = 0 ] || line="$line ($others for other reasons, listed above)"
elif [ "$skipped" -gt 0 ]; then
	line="$line (nothing to install: the reasons are listed above)"
fi
echo "$line"
[ "$failed" = 0 ]
