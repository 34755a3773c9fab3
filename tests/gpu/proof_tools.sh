#!/usr/bin/env bash
# The C tools scripts/gpu-proof builds on a GPU machine (scripts/gpu-proof.d:
# batch_race, ceiling, ctx_block, cuda_bw, cuda_calls), built and linked here
# against the CUDA toolkit's cuda.h and libcuda stub with -Wall -Wextra
# -Werror, so that a tool that no longer builds never first shows on a GPU
# machine, whose time is short; the CUDA C++ ones (staging_lines.cu,
# pingpong.cu) with the toolkit's nvcc where it has one. The toolkit:
# $CUDA_HOME, else /usr/local/cuda.
. "$(dirname "$0")/../lib.sh"

cuda=
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
	if [ -n "$d" ] && [ -f "$d/include/cuda.h" ] && [ -f "$d/lib64/stubs/libcuda.so" ]; then
		cuda=$d
		break
	fi
done
[ -n "$cuda" ] || skip "no CUDA toolkit (cuda.h and lib64/stubs/libcuda.so under CUDA_HOME or /usr/local/cuda)"
uring=$(pkg-config --cflags --libs liburing 2>/dev/null || echo -luring)
n=0
for src in "$SRCDIR"/scripts/gpu-proof.d/*.c; do
	name=$(basename "$src" .c)
	n=$((n + 1))
	# shellcheck disable=SC2086 # $uring is a list of flags
	if ${CC:-cc} -O2 -Wall -Wextra -Werror -I"$cuda/include" "$src" \
		-L"$cuda/lib64/stubs" -lcuda $uring -lpthread -o "$TMPD/$name" \
		2>"$TMPD/$name.err"; then
		pass "$name builds against $cuda's cuda.h and links with its libcuda stub"
	else
		fail "$name: $(head -3 "$TMPD/$name.err" | tr '\n' ' ')"
	fi
done
[ "$n" -ge 5 ] && pass "$n tools in scripts/gpu-proof.d" ||
	fail "only $n tools in scripts/gpu-proof.d"
# the CUDA C++ tools (staging_lines, pingpong) need nvcc, as gpu-proof builds them
nvcc=$cuda/bin/nvcc
for src in "$SRCDIR"/scripts/gpu-proof.d/*.cu; do
	name=$(basename "$src" .cu)
	if [ ! -x "$nvcc" ]; then
		echo "# no $nvcc: $name.cu not built"
	elif "$nvcc" -O2 -Wno-deprecated-gpu-targets -Xcompiler -Wall,-Wextra,-Werror \
		"$src" -L"$cuda/lib64/stubs" -lcuda -lpthread -o "$TMPD/$name" \
		2>"$TMPD/$name.err"; then
		pass "$name builds with $nvcc"
	else
		fail "$name: $(head -3 "$TMPD/$name.err" | tr '\n' ' ')"
	fi
done
finish
