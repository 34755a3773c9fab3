// SPDX-License-Identifier: MIT
/* Option checks, device id selection and the io_u -> buffer address map. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dbr_config.h"
#include "provider.h"
#include "dbr_uapi.h"

static struct dbr_job good_job(void)
{
	struct dbr_job j = {
		.transfer	= DBR_XFER_P2P,
		.direct		= true,
		.buf_bytes	= 32 * 4096,
		.maps_per_dev	= 1,
		.sqpoll_cpu	= -1,
	};
	return j;
}

static void test_check_job(void)
{
	struct dbr_job j = good_job();
	char msg[512];

	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "a plain p2p job passes");

	j = good_job();
	j.direct = false;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "direct=1"), "p2p with direct=0 is refused naming direct=1: %s", msg);
	j.transfer = DBR_XFER_BOUNCE;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "bounce with direct=0 passes");

	j = good_job();
	j.hipri = true;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "hipri (IOPOLL) with transfer=p2p") && strstr(msg, "use transfer=bounce"),
	      "hipri with p2p is refused, naming bounce: %s", msg);
	j.transfer = DBR_XFER_BOUNCE;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "hipri with bounce passes (a polled ring)");
	j.direct = false;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "hipri needs direct=1"), "hipri without O_DIRECT is refused: %s", msg);

	j = good_job();
	j.does_trim = true;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EOPNOTSUPP &&
	      strstr(msg, "trim"), "trim is refused: %s", msg);
	/* verify's trims (trim_percentage & co.): the same refusal, naming it */
	j = good_job();
	j.trim_opt = "trim_percentage=50";
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EOPNOTSUPP &&
	      strstr(msg, "trim is not supported: ") == msg &&
	      strstr(msg, "trim_percentage=50 is for fio's trims of verified blocks; drop it"),
	      "trim_percentage is refused as trim is: %s", msg);

	/* more entries than a ring takes: named before io_uring_setup's EINVAL */
	j = good_job();
	j.iodepth = DBR_RING_MAX_ENTRIES;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "iodepth=32768 passes");
	j.iodepth = 65536;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "iodepth=65536: an io_uring ring holds at most 32768 entries; set iodepth=32768 or less"),
	      "iodepth=65536 is refused with the ring's limit: %s", msg);

	j = good_job();
	j.buf_bytes = 2 * DBR_REGBUF_MAX_BYTES;
	j.max_bs = 8 << 20;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0,
	      "a 2 GiB area of 8 MiB I/Os passes: it registers in pieces");
	j.max_bs = DBR_REGBUF_MAX_BYTES - DBR_SPLIT_GRAN;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "bs=1022m fits a piece");
	j.max_bs += 4096;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -E2BIG &&
	      strstr(msg, "one I/O must fit a registered buffer, at most 1022 MiB"),
	      "one I/O over 1022 MiB is refused: %s", msg);

	j = good_job();
	j.nr_files = DBR_MAX_REG_BUFFERS;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "16384 files fit p2p's buffer table");
	j.nr_files = DBR_MAX_REG_BUFFERS + 1;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -E2BIG &&
	      strstr(msg, "nrfiles=16385: transfer=p2p registers a dma-buf per file"),
	      "16385 files are over p2p's buffer table: %s", msg);
	j.transfer = DBR_XFER_BOUNCE;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0,
	      "bounce uses one buffer slot for any number of files");

	j = good_job();
	j.maps_per_dev = DBR_MAX_MAPS_PER_DEV;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "256 mappings on a device pass");
	j.maps_per_dev = DBR_MAX_MAPS_PER_DEV + 1;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -E2BIG &&
	      strstr(msg, "257"), "257 mappings are refused: %s", msg);
	j.transfer = DBR_XFER_BOUNCE;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0,
	      "bounce registers no dma-buf, so no mapping limit");

	j = good_job();
	j.online_cpus = "0-3,8";
	j.sqpoll_cpu = 8;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == 0, "an online SQ CPU passes");
	j.sqpoll_cpu = 5;
	CHECK(dbr_check_job(&j, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "sqthread_poll_cpu=5: this machine has no online CPU 5 (online CPUs: 0-3,8)"),
	      "an SQ CPU the machine lacks is named with the CPUs it has: %s", msg);
}

/* every offset an I/O of up to max_bs may start at lies whole in its piece */
static bool split_holds(const struct dbr_split *sp, size_t max_bs, size_t step)
{
	size_t off;

	for (off = 0; off + max_bs <= sp->size; off += step) {
		unsigned int k = dbr_split_piece(sp, off);
		size_t start = (size_t)k * sp->span;

		if (k >= sp->nr || off < start ||
		    off + max_bs > start + dbr_split_len(sp, k))
			return false;
	}
	return true;
}

static void test_split(void)
{
	const size_t gib = DBR_REGBUF_MAX_BYTES, mib = 1 << 20;
	struct dbr_split sp;
	unsigned int k;
	size_t end = 0;

	CHECK(dbr_split_plan(&sp, 64 * mib, 1 * mib, gib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1 && dbr_split_len(&sp, 0) == 64 * mib &&
	      dbr_split_piece(&sp, 63 * mib) == 0,
	      "64 MiB: one piece (%u)", sp.nr);
	CHECK(dbr_split_plan(&sp, gib, 1 * mib, gib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1, "exactly 1 GiB: one piece (%u)", sp.nr);
	/* bs=8m iodepth=160, as fio pads it and providers round it */
	CHECK(dbr_split_plan(&sp, 1282 * mib, 8 * mib, gib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 2 && sp.span == 1016 * mib &&
	      dbr_split_len(&sp, 0) == gib && dbr_split_len(&sp, 1) == 266 * mib,
	      "1282 MiB of 8 MiB I/Os: 2 pieces, 1016 MiB apart (%u, span %zu MiB, %zu + %zu MiB)",
	      sp.nr, sp.span / mib, dbr_split_len(&sp, 0) / mib,
	      dbr_split_len(&sp, 1) / mib);
	CHECK(split_holds(&sp, 8 * mib, 4096),
	      "every 8 MiB I/O at any 4 KiB offset lies whole in its piece");
	CHECK(dbr_split_plan(&sp, 16 * gib + 4 * mib, 16 * mib, gib,
			     DBR_SPLIT_GRAN) == 0 && sp.nr == 17 &&
	      split_holds(&sp, 16 * mib, 2 * mib),
	      "bs=16m iodepth=1024 (16 GiB + padding): 17 pieces, each I/O in one (%u)",
	      sp.nr);
	for (k = 0; k < sp.nr; k++) {
		CHECK(dbr_split_len(&sp, k) <= gib &&
		      (size_t)k * sp.span % DBR_SPLIT_GRAN == 0 &&
		      dbr_split_len(&sp, k) % DBR_SPLIT_GRAN == 0,
		      "piece %u: at most 1 GiB, on 2 MiB boundaries", k);
		end = (size_t)k * sp.span + dbr_split_len(&sp, k);
	}
	CHECK(end == sp.size && dbr_split_len(&sp, sp.nr) == 0,
	      "the pieces end where the area does (%zu MiB)", end / mib);
	CHECK(dbr_split_plan(&sp, 4 * gib, gib - DBR_SPLIT_GRAN, gib,
			     DBR_SPLIT_GRAN) == 0 && split_holds(&sp, gib - DBR_SPLIT_GRAN, 2 * mib),
	      "the largest I/O (1022 MiB) still fits: %u pieces of span %zu MiB",
	      sp.nr, sp.span / mib);
	CHECK(dbr_split_plan(&sp, 4 * gib, gib, gib, DBR_SPLIT_GRAN) == -E2BIG,
	      "an I/O of 1 GiB cannot lie whole in a piece: -E2BIG");
	/* p2p's plan before the kernel refuses: one dma-buf, whatever the size */
	CHECK(dbr_split_plan(&sp, 3 * gib, 8 * mib, 3 * gib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1 && dbr_split_piece(&sp, 3 * gib - 8 * mib) == 0,
	      "cap = size: one piece of 3 GiB");
	/* p2p's one dma-buf of a small area: no room for the 2 MiB granule
	 * between the I/O and the piece's end is needed when nothing splits */
	CHECK(dbr_split_plan(&sp, 2 * mib, 4096, 2 * mib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1 && dbr_split_len(&sp, 0) == 2 * mib &&
	      dbr_split_piece(&sp, 2 * mib - 4096) == 0,
	      "cap = size = 2 MiB, 4 KiB I/Os (iodepth=1 bs=4k): one piece (%u)", sp.nr);
	CHECK(dbr_split_plan(&sp, 4 * mib, 2 * mib, 4 * mib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1 && split_holds(&sp, 2 * mib, 4096),
	      "cap = size = 4 MiB, 2 MiB I/Os: one piece that holds them all (%u)", sp.nr);
	CHECK(dbr_split_plan(&sp, gib, gib - 4096, gib, DBR_SPLIT_GRAN) == 0 &&
	      sp.nr == 1, "an I/O of nearly 1 GiB in a 1 GiB area: one piece (%u)", sp.nr);
}

static void test_split_warning(void)
{
	char msg[512];

	CHECK(dbr_split_warning("nvme0n1", 128 << 10, 128, 4096, msg, sizeof(msg)) == 0 &&
	      !msg[0], "bs=128k at max_sectors_kb=128: no line");
	CHECK(dbr_split_warning("nvme0n1", 256 << 10, 128, 4096, msg, sizeof(msg)) == 1 &&
	      strstr(msg, "bs=256 KiB is over nvme0n1's max_sectors_kb=128") &&
	      strstr(msg, "v3 of the io_uring dma-buf series hangs on split dma-buf I/O (fixed in v4)") &&
	      strstr(msg, "echo 4096 > /sys/block/nvme0n1/queue/max_sectors_kb"),
	      "bs=256k at 128: both sizes, why, and the fix: %s", msg);
	CHECK(dbr_split_warning("nvme0n1", 8 << 20, 512, 512, msg, sizeof(msg)) == 1 &&
	      strstr(msg, "keep bs <= 512 KiB") && !strstr(msg, "echo"),
	      "over the hardware limit too: no echo to suggest: %s", msg);
	CHECK(dbr_split_warning("nvme0n1", 8 << 20, -1, -1, msg, sizeof(msg)) == 0,
	      "limit unknown: no line");
}

/* stall_watchdog, as fio's time parser gives it (microseconds) */
static void test_watchdog_opt(void)
{
	uint64_t ns = 99;
	char msg[320];

	CHECK(dbr_pick_watchdog(false, 0, true, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 30000000000ULL, "unset, p2p: 30 s (%llu ns)", (unsigned long long)ns);
	CHECK(dbr_pick_watchdog(false, 0, false, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 0, "unset, bounce: off");
	CHECK(dbr_pick_watchdog(true, 5000000, false, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 5000000000ULL, "5 s on bounce: 5 s");
	CHECK(dbr_pick_watchdog(true, 0, true, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 0, "0 on p2p: off");
	CHECK(dbr_pick_watchdog(true, 1500, true, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 1500000, "1500 us: 1.5 ms");
	CHECK(dbr_pick_watchdog(true, 86400LL * 1000000, true, &ns, msg, sizeof(msg)) == 0 &&
	      ns == 86400000000000ULL, "a day: the most");
	CHECK(dbr_pick_watchdog(true, -5000000, true, &ns, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "stall_watchdog: -5 s (as fio reads the value) is out of range; want 0 (off), or 1 ms to 24 h in fio's time units"),
	      "-5 s refused: %s", msg);
	/* "5x": fio reads an unknown unit as microseconds */
	CHECK(dbr_pick_watchdog(true, 5, true, &ns, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "stall_watchdog: 5 us (as fio reads"), "5 us refused: %s", msg);
	CHECK(dbr_pick_watchdog(true, 90000LL * 1000000, true, &ns, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "stall_watchdog: 90000 s (as fio"), "over a day refused: %s", msg);
}

static void test_busiest_dev(void)
{
	/* this thread: two files on device 7, one on 9; beside it, two more
	 * threads (another job section) with a file on 7 each, one on 5 */
	const dev_t mine[] = { 7, 7, 9 };
	const dev_t all[] = { 7, 7, 9, 7, 7, 5 };

	CHECK(dbr_busiest_dev(mine, 3, all, 6) == 4,
	      "every thread's registrations on a device count (4 on device 7)");
	CHECK(dbr_busiest_dev(mine + 2, 1, all, 6) == 1,
	      "only the devices of this thread's files are counted");
	CHECK(dbr_busiest_dev(mine, 0, all, 6) == 0, "no block device, no count");
}

static void test_cpu_list(void)
{
	char cpus[128];

	CHECK(dbr_cpu_listed("0", 0) && !dbr_cpu_listed("0", 1), "single CPU list");
	CHECK(dbr_cpu_listed("0-3,8,10-11", 2) && dbr_cpu_listed("0-3,8,10-11", 8) &&
	      dbr_cpu_listed("0-3,8,10-11", 11) && !dbr_cpu_listed("0-3,8,10-11", 9) &&
	      !dbr_cpu_listed("0-3,8,10-11", 99999), "ranges and singles");
	CHECK(!dbr_cpu_listed("", 0) && !dbr_cpu_listed("x", 0), "garbage lists nothing");
	CHECK(dbr_online_cpus(cpus, sizeof(cpus)) == 0 && dbr_cpu_listed(cpus, 0),
	      "this machine's online CPUs (%s) include CPU 0", cpus);
}

static void test_dev_ids(void)
{
	int ids[DBR_MAX_DEV_IDS];
	char msg[256];
	int n;

	n = dbr_parse_dev_ids("0:1:3", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg));
	CHECK(n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 3, "0:1:3 parses");
	n = dbr_parse_dev_ids("", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg));
	CHECK(n == 1 && ids[0] == 0, "empty means device 0");
	n = dbr_parse_dev_ids("1:1", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg));
	CHECK(n == 2 && ids[0] == 1 && ids[1] == 1, "repeated entries are allowed");
	CHECK(dbr_parse_dev_ids("0:x", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "gpu_dev_ids=0:x"), "garbage is refused: %s", msg);
	CHECK(dbr_parse_dev_ids("0:", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "trailing ':'; drop it"), "a trailing ':' is refused with the fix: %s", msg);
	CHECK(dbr_parse_dev_ids("0::", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "empty entry") && strstr(msg, "give one device ordinal"),
	      "an empty entry is named, with the fix: %s", msg);
	CHECK(dbr_parse_dev_ids("-1", ids, DBR_MAX_DEV_IDS, msg, sizeof(msg)) == -EINVAL,
	      "negative ordinals are refused");
	CHECK(dbr_parse_dev_ids("0:1:2", ids, 2, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "list at most 2"), "too many entries are refused with the fix: %s", msg);

	/* every entry a job's threads use is checked, not just the thread's own */
	ids[0] = 0;
	ids[1] = 1;
	ids[2] = 2;
	CHECK(dbr_missing_dev(ids, 3, 3, 2) == 2, "0:1:2, 3 threads, 2 devices: 2 is missing");
	CHECK(dbr_missing_dev(ids, 3, 2, 2) == -1, "0:1:2, 2 threads: entry 2 is never used");
	CHECK(dbr_missing_dev(ids, 2, 8, 1) == 1, "0:1, 8 threads, 1 device: 1 is missing");
	CHECK(dbr_missing_dev(ids, 3, 8, 3) == -1, "all three exist");

	ids[0] = 0;
	ids[1] = 1;
	CHECK(dbr_pick_dev(ids, 2, 0) == 0 && dbr_pick_dev(ids, 2, 1) == 1 &&
	      dbr_pick_dev(ids, 2, 2) == 0 && dbr_pick_dev(ids, 2, 5) == 1,
	      "thread i uses entry i mod n");
}

static void test_addr_map(void)
{
	static char area[1 << 16];

	CHECK(dbr_io_addr(true, area, area) == 0, "first io_u is at dma-buf offset 0");
	CHECK(dbr_io_addr(true, area, area + 12288) == 12288,
	      "a dma-buf address is the offset inside the buffer");
	CHECK(dbr_io_addr(false, area, area + 12288) == (uint64_t)(uintptr_t)(area + 12288),
	      "a host-slot address is the user address");
}

static int sync_on(enum dbr_gpu_sync setting, bool verify, bool writes,
		   struct dbr_buf_opts buf, char *msg, size_t len)
{
	struct dbr_sync_job j = {
		.setting = setting, .copies = true, .verify = verify,
		.writes = writes, .buf = buf,
	};
	return dbr_gpu_sync_on(&j, msg, len);
}

static void test_gpu_sync(void)
{
	const struct dbr_buf_opts none = { 0 }, pattern = { .pattern = true },
		refill = { .refill = true }, compress = { .compress = true },
		dedupe = { .dedupe = true }, scramble = { .scramble = true };
	struct dbr_sync_job host = { .setting = DBR_SYNC_OFF, .verify = true };
	char msg[512];

	CHECK(sync_on(DBR_SYNC_AUTO, true, true, none, msg, sizeof(msg)) == 1 && !msg[0],
	      "auto syncs when verify is set");
	CHECK(sync_on(DBR_SYNC_AUTO, false, true, none, msg, sizeof(msg)) == 0 && !msg[0],
	      "auto does not sync a plain write job (fio's default scrambling does not count)");
	CHECK(sync_on(DBR_SYNC_ON, false, false, none, msg, sizeof(msg)) == 1, "1 always syncs");

	/* finding 1: verify without gpu_sync cannot pass */
	CHECK(sync_on(DBR_SYNC_OFF, true, true, none, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "gpu_sync=0 with verify") && strstr(msg, "set gpu_sync=1"),
	      "verify with gpu_sync=0 is refused naming gpu_sync: %s", msg);
	CHECK(sync_on(DBR_SYNC_OFF, true, false, none, msg, sizeof(msg)) == -EINVAL,
	      "read-only verify with gpu_sync=0 too: it would check the host copy only");
	CHECK(dbr_gpu_sync_on(&host, msg, sizeof(msg)) == 0,
	      "gpu=host: fio's buffers are the device memory, gpu_sync=0 and verify go together");

	/* finding 4: fio's buffer options decide what writes carry */
	CHECK(sync_on(DBR_SYNC_AUTO, false, true, pattern, msg, sizeof(msg)) == 1 &&
	      strstr(msg, "gpu_sync=auto -> 1: buffer_pattern"),
	      "auto syncs writes with buffer_pattern, and says so: %s", msg);
	CHECK(sync_on(DBR_SYNC_AUTO, false, true, refill, msg, sizeof(msg)) == 1 &&
	      sync_on(DBR_SYNC_AUTO, false, true, compress, msg, sizeof(msg)) == 1 &&
	      strstr(msg, "buffer_compress_percentage") &&
	      sync_on(DBR_SYNC_AUTO, false, true, dedupe, msg, sizeof(msg)) == 1 &&
	      sync_on(DBR_SYNC_AUTO, false, true, scramble, msg, sizeof(msg)) == 1,
	      "refill_buffers, buffer_compress_percentage, dedupe_percentage and scramble_buffers=1 too");
	CHECK(sync_on(DBR_SYNC_AUTO, false, false, pattern, msg, sizeof(msg)) == 0 && !msg[0],
	      "a read-only job writes nothing: no sync for buffer options");
	CHECK(sync_on(DBR_SYNC_OFF, false, true, pattern, msg, sizeof(msg)) == 0 &&
	      strstr(msg, "gpu_sync=0: buffer_pattern has no effect"),
	      "gpu_sync=0 stays off with buffer_pattern and says why: %s", msg);
}

/* transfer=auto/p2p: every reason at once, the kernel first, and auto's pick */
static void test_transfer(void)
{
	struct dbr_p2p_facts ok = { .probe = 0, .direct = true };
	struct dbr_p2p_facts all = {
		.probe = -EINVAL, .direct = false,
		.bad_file = "/dev/loop3", .bad_kind = "a loop device",
	};
	enum dbr_transfer x;
	char why[512];
	int ret;

	x = DBR_XFER_AUTO;
	ret = dbr_settle_transfer(&ok, &x, why, sizeof(why));
	CHECK(ret == 0 && x == DBR_XFER_P2P && !why[0],
	      "auto with the series, direct=1 and an NVMe namespace -> p2p");
	x = DBR_XFER_AUTO;
	ret = dbr_settle_transfer(&all, &x, why, sizeof(why));
	CHECK(ret == ENOTSUP && x == DBR_XFER_BOUNCE &&
	      strstr(why, "this kernel lacks the io_uring dma-buf series: the extended IORING_REGISTER_BUFFERS_UPDATE answered EINVAL") == why &&
	      !strstr(why, "released") &&
	      strstr(why, "; and direct=0") &&
	      strstr(why, "; and /dev/loop3 is a loop device"),
	      "auto without the series -> bounce, every reason, kernel first: %s", why);
	/* a mistyped device name that fio laid out as a file: say so */
	all.bad_file = "/dev/nvme9n9";
	all.bad_created = true;
	all.bad_size = 4 << 20;
	x = DBR_XFER_P2P;
	dbr_settle_transfer(&all, &x, why, sizeof(why));
	CHECK(strstr(why, "/dev/nvme9n9 did not exist, so fio created a 4096 KiB regular file by that name (check the name") &&
	      !strstr(why, "not a block device"), "a file fio created is named as such: %s", why);
	/* a new file elsewhere is one the job means: only what it is */
	all.bad_file = "/mnt/scratch/data.bin";
	all.bad_kind = "not a block device";
	dbr_settle_transfer(&all, &x, why, sizeof(why));
	CHECK(!strstr(why, "did not exist") &&
	      strstr(why, "/mnt/scratch/data.bin is not a block device (only nvme-pci namespaces"),
	      "a file fio created outside /dev is not called a mistyped name: %s", why);
	all.bad_kind = "a loop device";
	all.bad_file = "/dev/loop3";
	all.bad_created = false;
	all.probe = 0;
	x = DBR_XFER_P2P;
	ret = dbr_settle_transfer(&all, &x, why, sizeof(why));
	CHECK(ret == EINVAL && x == DBR_XFER_P2P && strstr(why, "direct=0") == why,
	      "p2p on a kernel with the series but a job it cannot take: EINVAL, p2p kept for the refusal: %s",
	      why);
	x = DBR_XFER_BOUNCE;
	ret = dbr_settle_transfer(&all, &x, why, sizeof(why));
	CHECK(ret == 0 && x == DBR_XFER_BOUNCE && !why[0],
	      "bounce needs nothing p2p needs");
}

static void test_spin_us(void)
{
	const char *name = NULL, *val;
	char msg[256];
	long ns = 7;

	CHECK(gpu_parse_spin_us("gpu_spin_us", "0", &ns, msg, sizeof(msg)) == 0 && ns == 0,
	      "gpu_spin_us=0: sleep at once");
	CHECK(gpu_parse_spin_us("gpu_spin_us", "50", &ns, msg, sizeof(msg)) == 0 && ns == 50000,
	      "gpu_spin_us=50: 50000 ns");
	CHECK(gpu_parse_spin_us("gpu_spin_us", "-1", &ns, msg, sizeof(msg)) == 0 && ns == -1,
	      "gpu_spin_us=-1: spin until done");
	ns = 7;
	CHECK(gpu_parse_spin_us("gpu_spin_us", "-2", &ns, msg, sizeof(msg)) == -EINVAL &&
	      ns == 7 && strstr(msg, "gpu_spin_us=-2: expected"),
	      "gpu_spin_us=-2 refused: %s", msg);
	CHECK(gpu_parse_spin_us("gpu_spin_us", "20us", &ns, msg, sizeof(msg)) == -EINVAL,
	      "gpu_spin_us=20us refused");
	CHECK(gpu_parse_spin_us("gpu_spin_us", "", &ns, msg, sizeof(msg)) == -EINVAL,
	      "gpu_spin_us= refused");
	CHECK(gpu_parse_spin_us("gpu_spin_us", "2000000", &ns, msg, sizeof(msg)) == -EINVAL,
	      "gpu_spin_us=2000000 (2 s) refused");

	/* the environment: the newer name first, an empty one as unset */
	setenv("DBR_GPU_SPIN_US", "", 1);
	setenv("DBR_CUDA_SPIN_US", "35", 1);
	val = gpu_spin_env(&name);
	CHECK(val && !strcmp(val, "35") && !strcmp(name, "DBR_CUDA_SPIN_US") &&
	      gpu_spin_ns() == 35000,
	      "DBR_CUDA_SPIN_US=35 where DBR_GPU_SPIN_US is empty: 35000 ns (%ld)",
	      gpu_spin_ns());
	setenv("DBR_GPU_SPIN_US", "-1", 1);
	val = gpu_spin_env(&name);
	CHECK(val && !strcmp(val, "-1") && !strcmp(name, "DBR_GPU_SPIN_US"),
	      "DBR_GPU_SPIN_US before DBR_CUDA_SPIN_US");
	unsetenv("DBR_GPU_SPIN_US");
	unsetenv("DBR_CUDA_SPIN_US");
	CHECK(!gpu_spin_env(&name), "neither set: no setting");
}

/* gpu_kernel: asked for is kept; auto launches only beside other job processes */
static void test_kernel_mode(void)
{
	const char *why = "x";

	CHECK(dbr_kernel_mode(GPU_KERNEL_RESIDENT, true, 4, &why) == GPU_KERNEL_RESIDENT &&
	      !why && dbr_kernel_mode(GPU_KERNEL_LAUNCH, false, 1, &why) == GPU_KERNEL_LAUNCH &&
	      !why, "gpu_kernel=resident and launch are kept, with no reason to give");
	CHECK(dbr_kernel_mode(DBR_GPU_KERNEL_AUTO, false, 16, &why) == GPU_KERNEL_RESIDENT &&
	      !why, "auto, job threads (one process): resident");
	CHECK(dbr_kernel_mode(DBR_GPU_KERNEL_AUTO, true, 1, &why) == GPU_KERNEL_RESIDENT &&
	      !why, "auto, one job process alone: resident");
	CHECK(dbr_kernel_mode(DBR_GPU_KERNEL_AUTO, true, 2, &why) == GPU_KERNEL_LAUNCH &&
	      why && strstr(why, "time-slices") && strstr(why, "thread=1"),
	      "auto, two job processes: a launch per pass, and why: %s", why ? why : "(none)");
}

/* gpu_owner: job processes of a GPU runtime go to the owner, unless 0 or MPS under auto */
static void test_context(void)
{
	CHECK(dbr_context_of(DBR_GPU_OWNER_AUTO, true, false, false) == DBR_CTX_NONE &&
	      dbr_context_of(1, true, false, true) == DBR_CTX_NONE,
	      "host memory: no context, whatever asked");
	CHECK(dbr_context_of(DBR_GPU_OWNER_AUTO, false, true, false) == DBR_CTX_PROCESS &&
	      dbr_context_of(1, false, true, false) == DBR_CTX_PROCESS,
	      "job threads: the process's own context (one context already)");
	CHECK(dbr_context_of(DBR_GPU_OWNER_AUTO, true, true, false) == DBR_CTX_OWNER &&
	      dbr_context_of(1, true, true, false) == DBR_CTX_OWNER,
	      "job processes, no MPS: the owner");
	CHECK(dbr_context_of(DBR_GPU_OWNER_AUTO, true, true, true) == DBR_CTX_MPS,
	      "job processes under MPS, auto: a context each, shared through MPS");
	CHECK(dbr_context_of(1, true, true, true) == DBR_CTX_OWNER,
	      "gpu_owner=1 under MPS: the owner still");
	CHECK(dbr_context_of(0, true, true, false) == DBR_CTX_PROCESS &&
	      dbr_context_of(0, true, true, true) == DBR_CTX_PROCESS,
	      "gpu_owner=0: the process's own context");
}

/*
 * gpu_watch_cq: 0 and 1 kept where the kernel can watch; auto by reads,
 * where they end, and threads against CPUs
 */
static void test_watch_cq(void)
{
	CHECK(!dbr_watch_cq(1, false, true, true, 16, 16) &&
	      !dbr_watch_cq(DBR_WATCH_CQ_AUTO, false, true, true, 64, 16),
	      "no resident kernel to watch (host memory, p2p, launches, DMA only): off, whatever asked");
	CHECK(dbr_watch_cq(1, true, false, false, 1, 16) &&
	      !dbr_watch_cq(0, true, true, true, 64, 16),
	      "gpu_watch_cq=1 and 0 are kept");
	CHECK(!dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, true, 8, 16) &&
	      !dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, true, 15, 16),
	      "auto: fewer job threads than CPUs: off");
	CHECK(dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, true, 16, 16) &&
	      dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, true, 32, 16),
	      "auto: as many job threads as CPUs, or more: on");
	CHECK(!dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, false, 16, 16) &&
	      !dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, false, 64, 16),
	      "auto: reads the block layer completes (task work): off at any thread count");
	CHECK(dbr_watch_cq(1, true, true, false, 16, 16),
	      "gpu_watch_cq=1 on a block device: on");
	CHECK(!dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, false, true, 32, 16),
	      "auto: a job that only writes: off");
	CHECK(!dbr_watch_cq(DBR_WATCH_CQ_AUTO, true, true, true, 16, -1),
	      "auto: online CPUs unknown: off");
	CHECK(dbr_reads_to_kernel(GPU_COPY_AUTO, 4096) &&
	      dbr_reads_to_kernel(GPU_COPY_AUTO, 512) &&
	      dbr_reads_to_kernel(GPU_COPY_AUTO, 60 << 10),
	      "gpu_copy=auto: reads under 64 KiB go to the kernel");
	CHECK(!dbr_reads_to_kernel(GPU_COPY_AUTO, 64 << 10) &&
	      !dbr_reads_to_kernel(GPU_COPY_AUTO, 1 << 20),
	      "gpu_copy=auto: a job whose smallest read is 64 KiB or more copies by DMA: nothing to watch");
	CHECK(dbr_reads_to_kernel(GPU_COPY_KERNEL, 1 << 20) &&
	      !dbr_reads_to_kernel(GPU_COPY_DMA, 4096),
	      "gpu_copy=kernel takes 1 MiB reads; gpu_copy=dma none");
	CHECK(!dbr_reads_to_kernel(GPU_COPY_AUTO, 0) &&
	      !dbr_reads_to_kernel(GPU_COPY_AUTO, 1000),
	      "no reads, or a smallest read not in 16-byte units: not to the kernel");
}

int main(void)
{
	test_watch_cq();
	test_check_job();
	test_transfer();
	test_split();
	test_split_warning();
	test_watchdog_opt();
	test_busiest_dev();
	test_cpu_list();
	test_dev_ids();
	test_addr_map();
	test_gpu_sync();
	test_spin_us();
	test_kernel_mode();
	test_context();
	return check_done("test_config");
}
