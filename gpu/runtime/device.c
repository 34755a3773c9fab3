// SPDX-License-Identifier: MIT
/*
 * The device life cycle of a GPU buffer over a runtime's table of calls;
 * see device.h. Nothing here knows CUDA or HIP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "device.h"

int gpu_errno_of(const struct gpu_errno_map *map, size_t n, int code)
{
	size_t i;

	if (!code)
		return 0;
	for (i = 0; i < n; i++)
		if (map[i].code == code)
			return map[i].err;
	return -EIO;
}

/* The runtime sees the device, and it is the buffer's: context current. */
static int dev_open(struct gpu_buf *b, struct gpu_dev *d)
{
	int n, ret;

	n = d->rt->probe(b->why, sizeof(b->why));
	if (n < 0)
		return n;
	if (b->dev_id < 0 || b->dev_id >= n) {
		snprintf(b->why, sizeof(b->why), "device %d does not exist (%d visible)",
			 b->dev_id, n);
		return -ENODEV;
	}
	ret = d->rt->open ? d->rt->open(b, d) : 0;
	if (ret < 0)
		return ret;
	ret = d->rt->enter(b);
	if (ret < 0 && d->rt->close)
		d->rt->close(d);
	return ret;
}

static void dev_close(struct gpu_dev *d)
{
	if (d->rt->close)
		d->rt->close(d);
}

/* Device memory on dev_id, page aligned: dma-buf export needs it. */
static int dev_alloc_device(struct gpu_buf *b, struct gpu_dev *d)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int ret;

	ret = d->rt->mem_alloc(b, d);
	if (ret < 0)
		return ret;
	if (!(d->dptr & (page - 1)))
		return 0;
	snprintf(b->why, sizeof(b->why), "%s returned 0x%llx, not aligned to the %zu-byte page dma-buf export needs",
		 d->rt->mem_alloc_name, (unsigned long long)d->dptr, page);
	d->rt->mem_free(d);
	d->dptr = 0;
	return -EIO;
}

/* The shadow: ordinary pages (io_uring pins them too), page-locked for DMA. */
static int dev_alloc_host(struct gpu_buf *b, struct gpu_dev *d)
{
	int ret;

	ret = gpu_shadow_map(b);
	if (ret < 0)
		return ret;
	ret = d->rt->host_register(b, b->host, b->size);
	if (ret < 0) {
		gpu_shadow_unmap(b);
		return ret;
	}
	d->host_locked = true;
	return 0;
}

static void dev_free_host(struct gpu_buf *b, struct gpu_dev *d)
{
	if (d->host_locked)
		d->rt->host_unregister(b->host);
	d->host_locked = false;
	gpu_shadow_unmap(b);
}

int gpu_dev_alloc(struct gpu_buf *b)
{
	const struct gpu_runtime *rt = b->prov->rt;
	struct gpu_dev *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->rt = rt;
	b->priv = d;
	ret = dev_open(b, d);
	if (ret < 0)
		goto err_free;
	ret = dev_alloc_device(b, d);
	if (ret < 0)
		goto err_close;
	ret = dev_alloc_host(b, d);
	if (ret < 0)
		goto err_dev;
	b->dev_addr = d->dptr;
	if (rt->describe)
		rt->describe(b, d);
	return 0;

err_dev:
	rt->mem_free(d);
err_close:
	dev_close(d);
err_free:
	b->priv = NULL;
	free(d);
	return ret;
}

int gpu_dev_export(struct gpu_buf *b)
{
	struct gpu_dev *d = b->priv;
	int fd = -1, ret;

	ret = d->rt->enter(b);
	if (ret < 0)
		return ret;
	ret = d->rt->export(b, d, &fd);
	if (ret < 0)
		return ret;
	b->dmabuf_fd = fd;
	return 0;
}

int gpu_dev_export_range(struct gpu_buf *b, size_t off, size_t len, int *fd)
{
	struct gpu_dev *d = b->priv;
	int ret;

	*fd = -1;
	if (!d->rt->export_range)
		return -EOPNOTSUPP;
	ret = d->rt->enter(b);
	return ret < 0 ? ret : d->rt->export_range(b, d, off, len, fd);
}

/* Reverse order of gpu_dev_alloc (a stream over b has been exited). */
void gpu_dev_free(struct gpu_buf *b)
{
	struct gpu_dev *d = b->priv;

	if (!d)
		return;
	d->rt->enter(b);
	/* copies outlived the stop's deadline: leave them their memory */
	if (b->abandoned) {
		gpu_keep_abandoned(b);
		return;
	}
	if (b->dmabuf_fd >= 0) {
		if (d->rt_fd)
			d->rt->close_dmabuf(b->dmabuf_fd);
		else
			close(b->dmabuf_fd);
	}
	b->dmabuf_fd = -1;
	dev_free_host(b, d);
	d->rt->mem_free(d);
	dev_close(d);
	free(d);
	b->priv = NULL;
	b->dev_addr = 0;
}
