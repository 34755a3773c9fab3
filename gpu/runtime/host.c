// SPDX-License-Identifier: MIT
/*
 * Host memory provider, for machines without a GPU: a sealed memfd mapping is
 * both the shadow fio sees and the "device" memory, so no copy is ever
 * needed (no runtime table, no copy stream). /dev/udmabuf (CONFIG_UDMABUF) turns the memfd into a dma-buf for the
 * p2p path; without it the memory still serves the fixed-buffer path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/udmabuf.h>

#include "provider.h"

#define UDMABUF_DEV		"/dev/udmabuf"
#define UDMABUF_LIMIT_PARAM	"/sys/module/udmabuf/parameters/size_limit_mb"

struct host_priv {
	int memfd;
};

static int host_probe(char *why, size_t len)
{
	(void)why;
	(void)len;
	return 1;
}

static int host_alloc(struct gpu_buf *b)
{
	struct host_priv *hp;
	int ret;

	hp = calloc(1, sizeof(*hp));
	if (!hp)
		return -ENOMEM;
	hp->memfd = memfd_create("dmabuf_uring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (hp->memfd < 0) {
		ret = -errno;
		goto err_free;
	}
	if (ftruncate(hp->memfd, b->size) < 0) {
		ret = -errno;
		goto err_close;
	}
	b->host = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       hp->memfd, 0);
	if (b->host == MAP_FAILED) {
		ret = -errno;
		b->host = NULL;
		goto err_close;
	}
	b->priv = hp;
	return 0;

err_close:
	close(hp->memfd);
err_free:
	free(hp);
	return ret;
}

/* udmabuf refuses buffers over its size_limit_mb module parameter. */
static long udmabuf_limit_mb(void)
{
	FILE *f = fopen(UDMABUF_LIMIT_PARAM, "re");
	long mb = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &mb) != 1)
		mb = -1;
	fclose(f);
	return mb;
}

/* [off, off + len) of the memfd as a dma-buf of its own: *fd */
static int host_export_range(struct gpu_buf *b, size_t off, size_t len,
			     int *fd)
{
	struct host_priv *hp = b->priv;
	struct udmabuf_create create = {
		.memfd	= (__u32)hp->memfd,
		.flags	= UDMABUF_FLAGS_CLOEXEC,
		.offset	= off,
		.size	= len,
	};
	long limit = udmabuf_limit_mb();
	int dev, ret;

	dev = open(UDMABUF_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		ret = -errno;
		snprintf(b->why, sizeof(b->why),
			 "%s: %s (kernel needs CONFIG_UDMABUF; try 'modprobe udmabuf')",
			 UDMABUF_DEV, strerror(-ret));
		return ret;
	}
	if (limit > 0 && len > (size_t)limit << 20) {
		snprintf(b->why, sizeof(b->why),
			 "buffer of %zu MiB is over udmabuf.size_limit_mb=%ld (raise it on the kernel command line, or lower iodepth/bs)",
			 len >> 20, limit);
		close(dev);
		return -E2BIG;
	}
	/* udmabuf insists that the memfd can no longer shrink under it */
	if (fcntl(hp->memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		ret = -errno;
		close(dev);
		return ret;
	}
	*fd = ioctl(dev, UDMABUF_CREATE, &create);
	ret = *fd < 0 ? -errno : 0;
	close(dev);
	if (ret < 0)
		snprintf(b->why, sizeof(b->why), "UDMABUF_CREATE: %s",
			 strerror(-ret));
	return ret;
}

static int host_export(struct gpu_buf *b)
{
	return host_export_range(b, 0, b->size, &b->dmabuf_fd);
}

static void host_free(struct gpu_buf *b)
{
	struct host_priv *hp = b->priv;

	if (b->dmabuf_fd >= 0)
		close(b->dmabuf_fd);
	b->dmabuf_fd = -1;
	if (b->host)
		munmap(b->host, b->size);
	b->host = NULL;
	if (hp) {
		close(hp->memfd);
		free(hp);
	}
	b->priv = NULL;
}

static int host_dmabuf_ok(int dev, char *why, size_t len)
{
	int err;

	(void)dev;
	if (!access(UDMABUF_DEV, R_OK | W_OK))
		return 0;
	err = errno;
	snprintf(why, len, "%s: %s (kernel needs CONFIG_UDMABUF; try 'modprobe udmabuf')",
		 UDMABUF_DEV, strerror(err));
	return -err;
}

const struct gpu_provider gpu_host_provider = {
	.name		= "host",
	.help		= "Host memory (memfd, /dev/udmabuf for p2p)",
	.export_needs	= "modprobe udmabuf (a kernel with CONFIG_UDMABUF), or raise udmabuf.size_limit_mb",
	.probe		= host_probe,
	.alloc		= host_alloc,
	.export_dmabuf	= host_export,
	.export_range	= host_export_range,
	.free		= host_free,
	.dmabuf_ok	= host_dmabuf_ok,
};
