#!/bin/sh
# Run every test binary given; fail if any failed, after running them all.
failed=0
ran=0
for t in "$@"; do
	echo "== $(basename "$t")"
	if "$t"; then :; else
		echo "FAILED: $(basename "$t") (exit $?)"
		failed=$((failed + 1))
	fi
	ran=$((ran + 1))
done
echo
echo "binaries: $((ran - failed)) passed, $failed failed"
[ "$failed" = 0 ]
