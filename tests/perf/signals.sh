#!/usr/bin/env bash
# scripts/perf stopped mid-run, as a CI job's timeout stops it (SIGTERM), a
# closed terminal (SIGHUP) or Ctrl-C (SIGINT): fio is stopped, the scratch
# target it made is gone (loop device and its /dev/shm image, the zram
# device reset, the /dev/shm file), one line says so, and the exit status is
# 128 + the signal, as a shell gives. scratch:loop and scratch:zram need
# root, losetup/zramctl and the kernel's support: each is skipped, saying
# why, where the machine lacks it; scratch:shm runs everywhere.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
export FIO DBR_ENGINE=$ENGINE

# stop_run NAME SIGNAL KIND: start a 30 s run on scratch:KIND, send SIGNAL
# once fio runs, and check what is left. A shell's background job ignores
# SIGINT (and scripts/perf keeps an ignored signal ignored, as nohup asks):
# the run is started with the signals at their defaults.
stop_run() {
	local name=$1 sig=$2 kind=$3 out=$TMPD/$1.out pid fio= rc=0 i dev left
	python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$perf" --jobs overhead-4k-randread \
		--impl dbr --runtime 30 --target "scratch:$kind" --size 64m \
		--out "$TMPD/$name" >"$out" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		fio=$(pgrep -P "$pid" -x fio) && break
		sleep 0.1
	done
	if grep -q "scratch:$kind needs" "$out"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		log "SKIP $name: $(grep -o "scratch:$kind needs[^;]*" "$out") (this machine)"
		return
	fi
	[ -n "$fio" ] || { fail "$name: fio did not start in 20 s"; kill -KILL "$pid"; cat "$out"; return; }
	sleep 0.5                   # fio has the target open
	kill -"$sig" "$pid"
	wait "$pid" || rc=$?
	# the target scripts/perf made, as its first line names it
	dev=$(sed -n 's/^scripts\/perf: .* target \([^:]*\): .*/\1/p' "$out" | head -1)
	left=
	kill -0 "$fio" 2>/dev/null && left+=" fio (pid $fio) still runs;"
	case $kind in
	loop)
		local img
		img=$(sed -n 's/.*loop device (buffered) over \([^ ]*\) in tmpfs.*/\1/p' "$out" | head -1)
		# a device fio's ring still held is detached at its last close
		for ((i = 0; i < 20; i++)); do
			losetup -j "$img" 2>/dev/null | grep -q . || break
			sleep 0.1
		done
		losetup -j "$img" 2>/dev/null | grep -q . && left+=" $(losetup -j "$img");"
		[ -e "$img" ] && left+=" $img;"
		[ -n "$img" ] || left+=" (no image named);" ;;
	zram)
		local z=/sys/block/${dev#/dev/}
		[ -e "$z/disksize" ] && [ "$(cat "$z/disksize")" != 0 ] &&
			left+=" $dev configured ($(cat "$z/disksize") bytes);" ;;
	shm)
		[ -e "$dev" ] && left+=" $dev;" ;;
	esac
	local want=$((128 + $(kill -l "$sig")))
	if [ "$rc" -eq "$want" ] && [ -z "$left" ] && [ -n "$dev" ] &&
		grep -q "^scripts/perf: stopped by SIG$sig: fio stopped, .*$dev.* \(removed\|reset\)" "$out"; then
		pass "$name: SIG$sig mid-run: exit $rc, nothing left of fio or $dev: $(grep '^scripts/perf: stopped' "$out" | cut -c1-160)"
	else
		fail "$name: SIG$sig mid-run: want exit $want and nothing left (exit $rc;$left)"
		tail -5 "$out" | sed 's/^/    /'
	fi
}

stop_run loop-term TERM loop
stop_run loop-hup HUP loop
stop_run loop-int INT loop
stop_run zram-term TERM zram
stop_run shm-term TERM shm
finish
