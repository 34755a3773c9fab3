// SPDX-License-Identifier: MIT
/*
 * dmabuf-doctor's sysfs helpers: the PCIe topology classification (paths as
 * /sys/devices spells them; this machine has no GPU to compare with), and the
 * readers against this machine's own sysfs and kernel config.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "doctor.h"

#define HB0 "/sys/devices/pci0000:00"
#define HB1 "/sys/devices/pci0000:80"

static void check_topo(const char *a, const char *b, int na, int nb,
		       enum dbr_dist want, const char *want_via)
{
	char via[DD_BDF_LEN];
	enum dbr_dist got = dbr_dist_classify(a, b, na, nb, via, sizeof(via));

	CHECK(got == want && !strcmp(via, want_via),
	      "%s: got %s via '%s'", dbr_dist_name(want), dbr_dist_name(got), via);
}

static void test_classify(void)
{
	/* root port 01.0 -> switch up 01:00.0 -> down 02:0x.0 -> endpoints */
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0",
		   HB0 "/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:04:00.0",
		   0, 0, DBR_DIST_SWITCH, "0000:01:00.0");
	/* two functions of one device below a root port */
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0",
		   HB0 "/0000:00:01.0/0000:01:00.1",
		   0, 0, DBR_DIST_ROOT_PORT, "0000:00:01.0");
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0",
		   HB0 "/0000:00:03.0/0000:05:00.0",
		   0, 0, DBR_DIST_HOST_BRIDGE, "pci0000:00");
	/* integrated endpoints on the root bus, as in a VM */
	check_topo(HB0 "/0000:00:04.0", HB0 "/0000:00:05.0",
		   -1, -1, DBR_DIST_HOST_BRIDGE, "pci0000:00");
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0",
		   "/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0",
		   0, 0, DBR_DIST_NUMA, "");
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0",
		   HB1 "/0000:80:01.0/0000:81:00.0",
		   0, 1, DBR_DIST_OTHER, "");
	/* no NUMA information: cannot tell sockets apart */
	check_topo(HB0 "/0000:00:01.0/0000:01:00.0",
		   HB1 "/0000:80:01.0/0000:81:00.0",
		   -1, -1, DBR_DIST_OTHER, "");
	check_topo("/sys/devices/virtual/block/loop0", HB0 "/0000:00:04.0",
		   0, 0, DBR_DIST_UNKNOWN, "");
}

/* the readers, against this machine */
static void test_machine(void)
{
	char bdf[DD_BDF_LEN], path[256], src[64], buf[256];
	enum dd_kconf k;
	long v;

	CHECK(dbr_sys_read_long("/proc/sys/kernel/pid_max", &v) == 0 && v > 0,
	      "dbr_sys_read_long(pid_max) = %ld", v);
	CHECK(dbr_sys_read_str("/nonexistent/doctor", buf, sizeof(buf)) < 0,
	      "dbr_sys_read_str of a missing file fails");
	CHECK(dbr_bdf_of_path("/sys/devices/virtual/mem/null", bdf,
			     sizeof(bdf)) < 0,
	      "a virtual device has no PCI function");
	if (dd_count_dir("/sys/bus/pci/devices") > 0 &&
	    dbr_sys_read_str("/sys/bus/pci/devices/0000:00:00.0/vendor", buf,
			sizeof(buf)) == 0) {
		CHECK(dbr_pci_sys_path("", "0000:00:00.0", path, sizeof(path)) == 0 &&
		      dbr_bdf_of_path(path, bdf, sizeof(bdf)) == 0 &&
		      !strcmp(bdf, "0000:00:00.0"),
		      "PCI function 0000:00:00.0 resolves to %s", path);
	}
	k = dd_kconfig("CONFIG_IO_URING", src, sizeof(src));
	CHECK(k == DD_KCONF_YES || k == DD_KCONF_UNKNOWN,
	      "CONFIG_IO_URING from '%s': %s", src,
	      dd_kconf_name(k) ? dd_kconf_name(k) : "unreadable");
	if (k != DD_KCONF_UNKNOWN)
		CHECK(dd_kconfig("CONFIG_DBR_NO_SUCH_SYMBOL", src,
				 sizeof(src)) == DD_KCONF_NO,
		      "a symbol the config does not mention is off");
	dd_cmdline_iommu(buf, sizeof(buf));
	CHECK(!strstr(buf, "--"), "iommu settings of the command line: '%s'", buf);
}

int main(void)
{
	test_classify();
	test_machine();
	return check_done("test_topology");
}
