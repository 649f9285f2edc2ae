#!/bin/bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for
# SECONDS (default 60). Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
# Corpora and crash artifacts stay under $BUILD/fuzz (default build/fuzz),
# so a rerun goes on from what earlier runs found. Prints one line per
# target, "ok - ..." or "FAIL - ...", and exits 1 when a target failed.
set -uo pipefail

SECONDS_EACH=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${BUILD:-build}/fuzz
CLANG=${CLANG:-clang}
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(fuzz_redact fuzz_jsonw)
# shellcheck disable=SC2054 # -fsanitize=a,b is one argument
FLAGS=(-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -fno-omit-frame-pointer -Iinclude -Iuserspace)
declare -A SRCS=(
	[fuzz_redact]="userspace/audit/redact.c userspace/audit/redact_rules.c userspace/audit/redact_cmd.c"
	[fuzz_jsonw]="userspace/lib/jsonw.c userspace/lib/json.c userspace/lib/ratelimit.c userspace/lib/util.c userspace/lib/names.c userspace/audit/event.c userspace/audit/encode.c userspace/audit/redact.c userspace/audit/redact_rules.c userspace/audit/redact_cmd.c userspace/lib/sha256.c -ljson-c"
)

mkdir -p "$OUT/artifacts"

# seed NAME FILE BYTES: one corpus entry (printf escapes).
seed() {
	mkdir -p "$OUT/corpus/$1"
	# shellcheck disable=SC2059 # the seed is a printf format on purpose
	[ -e "$OUT/corpus/$1/$2" ] || printf "$3" >"$OUT/corpus/$1/$2"
}
seed fuzz_redact argv '\000curl\000-H\000Authorization: Bearer abcdefgh1234\000--token\000x'
seed fuzz_redact url '\001git clone https://oauth2:glpat-abcdefghijklmnop1234@gitlab.com/a.git'
seed fuzz_redact kv '\000{"password": "a b", "api_key":"k"} token=a&b GITHUB_TOKEN=ghp_abcdefghijklmnop1234'
seed fuzz_redact bare '\000/usr/lib/x/Z3aWZkSBvrjn9Wvgfygw2wMqZcUDIh7yfJs1ON43/550e8400-e29b-41d4-a716-446655440000'
seed fuzz_redact cmd '\000sudo\000sshpass\000-pX\000docker login -p x; htpasswd -nb u p\000openssl\000-passin\000pass:x\000env\000DB_PASS=x'
seed fuzz_redact tail '\002x\000--api-key\000sk-abc123 AKIAIOSFODNN7EXA'
seed fuzz_jsonw ascii 'hello "world" \\ \t\n'
seed fuzz_jsonw bytes 'a\001b\377c\303\251\355\240\200\364\220\200\200\300\257'
seed fuzz_jsonw record '\001\000\000\000\001\000\000\000\007\000\000\000\000\000\000\000'

cat >"$OUT/redact.dict" <<'DICT'
"token="
"api_key="
"password:"
"Authorization: "
"Bearer "
"--token"
"--auth"
"--api-key"
"\x00"
"://"
"@"
":"
"\""
"ghp_"
"github_pat_"
"AKIA"
"xoxb-"
"sk-"
"[REDACTED]"
"sha512-"
"/"
"sshpass"
"htpasswd"
"-b"
"-p"
"pass:"
"login"
"machine "
"password "
"_PASS="
DICT

# one TARGET: built and run, its line into $OUT/TARGET.result, 1 on failure.
one() {
	local t=$1 rc runs dict=()

	# shellcheck disable=SC2086
	if ! "$CLANG" "${FLAGS[@]}" "tests/fuzz/$t.c" ${SRCS[$t]} -o "$OUT/$t" 2>"$OUT/$t.build.log"; then
		echo "FAIL - $t: build failed: $(head -c 600 "$OUT/$t.build.log")"
		return 1
	fi
	[ "$t" = fuzz_redact ] && dict=(-dict="$OUT/redact.dict")
	"$OUT/$t" "$OUT/corpus/$t" "${dict[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 \
		-rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
		-artifact_prefix="$OUT/artifacts/$t-" >"$OUT/$t.log" 2>&1
	rc=$?
	runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$')
	if [ $rc -eq 0 ]; then
		echo "ok - $t: ${runs:-?} runs in ${SECONDS_EACH}s, corpus $(ls "$OUT/corpus/$t" | wc -l)"
		return 0
	fi
	echo "FAIL - $t: exit $rc; see $OUT/$t.log and $OUT/artifacts/"
	grep -E 'ERROR|SUMMARY|==[0-9]+==' "$OUT/$t.log" | head -5
	return 1
}

# The targets side by side, one a CPU (each is one process): the CI's
# fuzz step takes SECONDS once instead of once per target. Their lines
# are printed in the targets' order.
fail=0
pids=()
for t in "${TARGETS[@]}"; do
	if [ -z "${SRCS[$t]:-}" ]; then
		echo "FAIL - $t: no such target (${!SRCS[*]})"
		fail=1
		continue
	fi
	one "$t" >"$OUT/$t.result" 2>&1 &
	pids+=("$!:$t")
done
for p in "${pids[@]}"; do
	wait "${p%%:*}" || fail=1
	cat "$OUT/${p#*:}.result"
done
exit $fail
