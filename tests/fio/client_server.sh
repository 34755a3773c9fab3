#!/usr/bin/env bash
# fio's own distributed mode: the engine loads and runs inside `fio --server`
# driven by `fio --client` over loopback, with verify, and the engine's
# messages reach the client.
. "$(dirname "$0")/../lib.sh"

port=$((20000 + RANDOM % 20000))
run_fio --server=ip:127.0.0.1,$port --daemonize="$TMPD/server.pid" >"$TMPD/server.log" 2>&1 ||
	die "fio --server did not start"
at_exit 'kill $(cat "$TMPD/server.pid") 2>/dev/null'
for _ in $(seq 50); do
	ss -ltn 2>/dev/null | grep -q ":$port " && break
	sleep 0.1
done

# the client only talks to the server: it never loads the engine, so it
# runs as plain "$FIO" even in the sanitizer pass
cat >"$TMPD/job.fio" <<JOB
[global]
ioengine=external:$ENGINE
gpu=host
transfer=auto
direct=1
size=8m
bs=4k
iodepth=16
verify=crc32c
verify_fatal=1

[cs]
directory=$TMPD
rw=randwrite
numjobs=2
thread
JOB

if "$FIO" --client=ip:127.0.0.1,$port "$TMPD/job.fio" >"$TMPD/client.out" 2>&1 &&
	! grep -q "err= *[1-9]" "$TMPD/client.out"; then
	pass "job ran through fio --client/--server with verify"
else
	fail "job ran through fio --client/--server with verify"
	tail -20 "$TMPD/client.out"
fi
grep -q "dmabuf_uring: cs: transfer=auto -> bounce" "$TMPD/client.out" &&
	pass "the engine's path line reaches the client" ||
	fail "the engine's path line reaches the client"

# machine-readable output at the client parses whole: the server runs with
# the client's --output-format, and keeps the engine's lines off the wire
jparse() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["client_stats"]) >= 2, d.keys()' "$1"
}
for fmt in json json+; do
	for dest in stdout file; do
		res=$TMPD/client-$fmt-$dest.out args=(--output-format=$fmt)
		[ $dest = file ] && res=$TMPD/client-$fmt.res && args+=(--output="$res")
		if "$FIO" --client=ip:127.0.0.1,$port "${args[@]}" "$TMPD/job.fio" \
			>"$TMPD/client-$fmt-$dest.out" 2>"$TMPD/client-$fmt-$dest.err" &&
			! grep -q "^[^{ ]*dmabuf_uring: " "$res" && jparse "$res" 2>"$TMPD/client-$fmt-$dest.py"; then
			pass "fio --client --output-format=$fmt ($dest): the document parses, no line of ours in it"
		else
			fail "fio --client --output-format=$fmt ($dest): $(grep -m2 "dmabuf_uring: " "$res") $(tail -1 "$TMPD/client-$fmt-$dest.py" 2>/dev/null)"
		fi
	done
done

# a refusal on the server side fails the client run too
sed -i 's/^transfer=auto/transfer=p2p/' "$TMPD/job.fio"
if "$FIO" --client=ip:127.0.0.1,$port "$TMPD/job.fio" >"$TMPD/client-bad.out" 2>&1; then
	fail "a p2p refusal on the server fails the client run"
else
	grep -q "transfer=p2p cannot run" "$TMPD/client-bad.out" &&
		pass "a p2p refusal on the server fails the client run, with the reason" ||
		{ fail "p2p refusal reason missing at the client"; tail -10 "$TMPD/client-bad.out"; }
fi
finish
