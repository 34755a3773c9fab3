# shellcheck shell=bash
# kill -9 in the middle of a run of job processes through the GPU owner: of
# the owner, of one job process, of fio itself; then what each left behind:
# processes, GPU memory held by any of them, files in /dev/shm. Sourced by
# scripts/gpu-proof (procs, PROCS_PARTS=kill: real CUDA, GPU memory as
# nvidia-smi lists it per process) and by tests/gpu/hip_owner.sh (the HIP
# double, which gives gpu_held from its report instead).

# owner_of FILE: the owner serving the fio run that has FILE on its command
# line (the owner's arguments: PROVIDER DEV RUN)
owner_of() {
	local o run
	for o in $(pgrep -x dbr-gpu-owner); do
		run=$(tr '\0' ' ' 2>/dev/null <"/proc/$o/cmdline" | awk '{ print $4 }')
		[ -n "$run" ] && tr '\0' ' ' 2>/dev/null <"/proc/$run/cmdline" |
			grep -qF "$1" && echo "$o"
	done
}

# owner_serving FILE N: owner_of FILE once it has taken N job processes'
# connections (its sockets, less the one it listens on), within 20 s. Job
# processes that start together may each start an owner; all but one leave
# at once (the socket's name is the lock), so the first pid seen may be one
# about to leave. And a job process that comes after the owner was killed
# finds none and starts its own: kill nothing before every one is served.
owner_serving() {
	local i o n
	for ((i = 0; i < 200; i++)); do
		for o in $(owner_of "$1"); do
			n=$(find "/proc/$o/fd" -lname 'socket:*' 2>/dev/null | wc -l)
			[ "$n" -gt "$2" ] && echo "$o" && return 0
		done
		sleep 0.1
	done
	return 1
}

# gone PID [SECONDS]: the process ended (a zombie counts as ended) in time
gone() {
	local i
	for ((i = 0; i < ${2:-3} * 10; i++)); do
		[ -d "/proc/$1" ] || return 0
		grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# gpu_held PID: MiB of GPU memory PID holds as nvidia-smi lists it, 0 for
# none (a test without a GPU defines its own, and GPU_HELD_UNIT, before it
# sources this)
if ! declare -F gpu_held >/dev/null; then
	gpu_held() {
		nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
			awk -F', *' -v p="$1" '$1 == p { s += $2 } END { print s + 0 }'
	}
fi

# gpu_used: MiB of memory in use on the machine's GPUs, all of them, as
# nvidia-smi says it ("" without one)
if ! declare -F gpu_used >/dev/null; then
	gpu_used() {
		nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null |
			awk '{ s += $1; n++ } END { if (n) print s }'
	}
fi

# shm_list: /dev/shm's entries, one a line, sorted
shm_list() { find /dev/shm -mindepth 1 -maxdepth 1 -printf '%f\n' | sort; }

# ms since the epoch
now_ms() { date +%s%3N; }

# leftovers SHM-BEFORE PID...: what of the run is still there after it, in
# words ("" for nothing): a process, GPU memory any of them holds (the
# driver may take a moment to free a dead process's: up to 5 s), a new
# /dev/shm entry
leftovers() {
	local before=$1 p i held left=
	shift
	for p in "$@"; do
		gone "$p" 5 || left="$left process $p;"
	done
	for p in "$@"; do
		for ((i = 0; i < 50; i++)); do
			held=$(gpu_held "$p")
			[ "${held:-0}" = 0 ] && break
			sleep 0.1
		done
		[ "${held:-0}" = 0 ] || left="$left $p holds $held ${GPU_HELD_UNIT:-MiB} of GPU memory;"
	done
	p=$(comm -13 <(echo "$before") <(shm_list) | tr '\n' ' ')
	[ -n "$p" ] && left="$left /dev/shm: $p;"
	echo "${left% ;}"
}

# kill_run WHAT FILE N RUN...: RUN (fio with N >= 2 job processes through
# the owner on FILE, running long enough) in the background; once the owner
# serves all N, kill -9 WHAT (owner, job, fio) and judge what follows:
#   owner: fio stops within 15 s, non-zero, with the owner's line;
#   job:   the owner frees that process's GPU memory within 3 s and serves
#          the others on (fio itself may end non-zero: fio 3.33 aborts at
#          its end when a job process died so);
#   fio:   the owner and the job processes are gone within 10 s;
# and in every case nothing is left (leftovers). One line says it all;
# non-zero if a promise broke. KILL_OUT names RUN's output file.
kill_run() {
	local what=$1 file=$2 n=$3 out=${KILL_OUT:-/dev/null}
	local shm owner main kids=() victim t0 ms rc=0 ok=1 said held0 held1 i p left=
	local unit=${GPU_HELD_UNIT:-MiB}
	shift 3
	shm=$(shm_list)
	"$@" >"$out" 2>&1 &
	local bg=$!
	owner=$(owner_serving "$file" "$n")
	main=$(pgrep -f -o -- "--filename=$file")
	mapfile -t kids < <(pgrep -P "$main" 2>/dev/null)
	if [ -z "$owner" ] || [ "${#kids[@]}" = 0 ]; then
		echo "kill -9 $what: no owner serving $n job processes of $file (owners: $(owner_of "$file" | tr '\n' ' '))"
		pkill -9 -f -- "--filename=$file"
		wait "$bg" 2>/dev/null
		return 1
	fi
	sleep 1
	case $what in
	owner) victim=$owner ;;
	job) victim=${kids[0]} ;;
	fio) victim=$main ;;
	esac
	held0=$(gpu_held "$owner")
	t0=$(now_ms)
	kill -9 "$victim"
	case $what in
	owner)
		gone "$bg" 15 || ok=0
		ms=$(($(now_ms) - t0))
		if [ "$ok" = 0 ]; then
			said="fio still ran 15 s later"
			pkill -9 -f -- "--filename=$file"
		fi
		wait "$bg" || rc=$?
		if [ "$ok" = 1 ]; then
			said="fio stopped $ms ms later, exit $rc"
			if [ "$rc" -ne 0 ] && grep -q "GPU owner process (pid $owner) of .* went away" "$out"; then
				said="$said, with the owner's line"
			else
				said="$said, without the owner's line"
				ok=0
			fi
		fi
		;;
	job)
		for ((i = 0; i < 30; i++)); do
			held1=$(gpu_held "$owner")
			[ "$held1" -lt "$held0" ] && break
			sleep 0.1
		done
		ms=$(($(now_ms) - t0))
		if [ "$held1" -lt "$held0" ] && [ -d "/proc/$owner" ]; then
			said="the owner freed $((held0 - held1)) of its $held0 $unit of GPU memory within $ms ms and served the others on"
		else
			said="the owner held $held0 $unit of GPU memory before and $held1 $unit 3 s later$([ -d "/proc/$owner" ] || echo ", and left")"
			ok=0
		fi
		wait "$bg" || rc=$?
		said="$said; fio exit $rc"
		;;
	fio)
		for p in "$owner" "${kids[@]}"; do gone "$p" 10 || left="$left $p"; done
		ms=$(($(now_ms) - t0))
		if [ -z "$left" ]; then
			said="the owner and ${#kids[@]} job processes were gone $ms ms later"
		else
			said="still running 10 s later:$left"
			ok=0
		fi
		wait "$bg" 2>/dev/null
		;;
	esac
	left=$(leftovers "$shm" "$owner" "${kids[@]}" "$main")
	[ -n "$left" ] && ok=0
	echo "kill -9 $what: $said; left: ${left:-nothing}"
	[ "$ok" = 1 ]
}
