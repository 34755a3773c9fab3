// SPDX-License-Identifier: MIT
/*
 * The host provider and the provider registry: allocation, the udmabuf
 * export (real where /dev/udmabuf exists, the clear refusal where it does
 * not), and that free releases every descriptor and mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "provider.h"

static void test_registry(void)
{
	char why[192] = "";
	const struct gpu_provider *p;

	CHECK(gpu_provider_by_name("host") == &gpu_host_provider, "host by name");
	CHECK(gpu_provider_by_name("cuda") && gpu_provider_by_name("hip"),
	      "cuda and hip answer by name even when absent");
	CHECK(gpu_provider_by_name("opencl") == NULL, "unknown names are NULL");
	p = gpu_provider_auto(why, sizeof(why));
	CHECK(p && p->probe(why, sizeof(why)) > 0,
	      "gpu=auto picks a provider with a device: %s", p ? p->name : "none");
	CHECK(gpu_buf_round(1) == 2u << 20 && gpu_buf_round(2u << 20) == 2u << 20,
	      "sizes round up to the 2 MiB export granularity");
}

static bool fdinfo_has(int fd, const char *what)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, what))
			found = true;
	fclose(f);
	return found;
}

static void test_host_buf(void)
{
	int fds = count_fds(), ret;
	struct gpu_buf b;

	gpu_buf_init(&b, &gpu_host_provider, 0, gpu_spin_ns());
	CHECK(b.dmabuf_fd == -1 && !b.host, "nothing held before alloc");
	ret = gpu_buf_alloc(&b, 3 << 20);
	CHECK(b.size == 4u << 20, "buffer sized to 4 MiB");
	CHECK(ret == 0 && b.host && b.host_is_device, "host memory allocated (%d)", ret);
	if (ret)
		return;
	memset(b.host, 0x5a, b.size);
	CHECK(!b.prov->rt, "no runtime calls, so no copy stream: the shadow is the memory");

	ret = b.prov->export_dmabuf(&b);
	if (access("/dev/udmabuf", F_OK) == 0) {
		CHECK(ret == 0 && b.dmabuf_fd >= 0 &&
		      fdinfo_has(b.dmabuf_fd, "udmabuf"),
		      "exported through /dev/udmabuf (%d)", ret);
	} else {
		CHECK(ret < 0 && b.dmabuf_fd == -1 && strstr(b.why, "CONFIG_UDMABUF"),
		      "no /dev/udmabuf: refused with the fix: %s", b.why);
	}
	gpu_buf_free(&b);
	CHECK(count_fds() == fds && b.host == NULL && b.dmabuf_fd == -1,
	      "free releases the memfd, mapping and dma-buf");
	gpu_buf_free(&b);
	CHECK(count_fds() == fds, "a second free is harmless");
}

/*
 * transfer=auto asks the provider whether its memory can be a dma-buf at
 * all before it settles on p2p: the answer agrees with a real export.
 */
static void test_dmabuf_ok(void)
{
	struct gpu_buf b;
	char why[256] = "";
	int ok, ret;

	CHECK(gpu_host_provider.dmabuf_ok != NULL, "the host provider answers dmabuf_ok");
	if (!gpu_host_provider.dmabuf_ok)
		return;
	ok = gpu_host_provider.dmabuf_ok(0, why, sizeof(why));
	gpu_buf_init(&b, &gpu_host_provider, 0, gpu_spin_ns());
	ret = gpu_buf_alloc(&b, 2u << 20);
	CHECK(ret == 0, "a 2 MiB host buffer: %s", b.why);
	if (ret)
		return;
	ret = gpu_host_provider.export_dmabuf(&b);
	CHECK((ok == 0) == (ret == 0),
	      "dmabuf_ok (%d%s%s) agrees with an export (%d: %s)", ok,
	      why[0] ? ": " : "", why, ret, b.why);
	CHECK(ok == 0 || strstr(why, "CONFIG_UDMABUF"), "a refusal names udmabuf: %s", why);
	gpu_buf_free(&b);
}

int main(void)
{
	test_registry();
	test_dmabuf_ok();
	test_host_buf();
	return check_done("test_host");
}
