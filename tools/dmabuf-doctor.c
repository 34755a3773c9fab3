// SPDX-License-Identifier: MIT
/*
 * dmabuf-doctor: will dmabuf_uring's p2p path run on this machine, and if
 * not, exactly why not. See doctor.h for how it is put together and
 * docs/doctor.md for the checks and the JSON schema.
 *
 * Exit status: 0 ready, 1 not ready, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

#define DD_EXIT_READY		0
#define DD_EXIT_NOT_READY	1
#define DD_EXIT_USAGE		2

/* the usage line, --gpu's values from the provider registry */
static const char *usage_line(void)
{
	static char line[256];
	char names[96];

	snprintf(line, sizeof(line), "usage: dmabuf-doctor [--json] [--gpu auto|%s] [--gpu-dev N] [--p2p-iommu refuse|allow] /dev/nvmeXnY",
		 gpu_provider_names(names, sizeof(names), "|", "|"));
	return line;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("dmabuf-doctor: ", stderr);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s\n", usage_line());
	return DD_EXIT_USAGE;
}

/* --gpu: auto, or a provider's name */
static int check_gpu(const char *name)
{
	char names[96], msg[256];

	if (!strcmp(name, "auto") || gpu_provider_by_name(name))
		return 0;
	snprintf(msg, sizeof(msg), "--gpu %.64s: want auto, %s", name,
		 gpu_provider_names(names, sizeof(names), ", ", " or "));
	return usage_error("%s", msg);
}

static int parse_dev(const char *s, int *dev)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT_MAX)
		return -EINVAL;
	*dev = (int)v;
	return 0;
}

/* 0 to run, else the exit status (help: 0, bad usage: 2) */
static int parse_args(int argc, char **argv, struct dd_opts *o, bool *done)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "gpu-dev", required_argument, NULL, 'd' },
		{ "p2p-iommu", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*done = false;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'g':
			if (check_gpu(optarg))
				return DD_EXIT_USAGE;
			o->gpu = optarg;
			break;
		case 'd':
			if (parse_dev(optarg, &o->gpu_dev))
				return usage_error("--gpu-dev %s: want a device number (0, 1, ...)", optarg);
			break;
		case 'i':
			if (strcmp(optarg, "refuse") && strcmp(optarg, "allow"))
				return usage_error("--p2p-iommu %s: want refuse or allow (as fio's p2p_iommu)", optarg);
			o->p2p_iommu = strcmp(optarg, "allow") ?
				       DBR_P2P_IOMMU_REFUSE : DBR_P2P_IOMMU_ALLOW;
			break;
		case 'h':
			printf("%s\n", usage_line());
			*done = true;
			return 0;
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default:
			if (optopt) {
				char opt[3] = { '-', (char)optopt, '\0' };

				return usage_error("unknown option %s", opt);
			}
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error("%s", "no device given");
	if (optind + 1 < argc)
		return usage_error("one device only, not also '%s'", argv[optind + 1]);
	/* "" would run every check on no file and blame each of them */
	if (!argv[optind][0])
		return usage_error("%s", "an empty device path; name the NVMe namespace, e.g. /dev/nvme0n1");
	o->target = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	static struct dd_ctx c;	/* a few KiB: off the stack */
	struct dd_opts *o = &c.rep.opts;
	bool done;
	int ret;

	o->gpu = "auto";
	ret = parse_args(argc, argv, o, &done);
	if (ret || done)
		return ret;
	dd_gather(&c);
	dd_release(&c);
	dd_judge(&c.rep);
	if (o->json)
		dd_print_json(&c.rep);
	else
		dd_print_text(&c.rep);
	return c.rep.ready ? DD_EXIT_READY : DD_EXIT_NOT_READY;
}
