// SPDX-License-Identifier: MIT
/*
 * dmabuf-doctor, step 3: one report, two printers. The text form is for
 * people, the JSON form (schema: docs/doctor.md) for scripts; both end with
 * the same verdict.
 */
#include <stdio.h>
#include <string.h>

#include <config.h>
#include "doctor.h"
#include "dbr_uapi.h"
#include "results.h"

/* ---- verdict ------------------------------------------------------------ */

/* "p2p: ready", or "p2p: not ready: " and every failed check's reason */
static void verdict(const struct dd_report *rep, char *buf, size_t len)
{
	const char *sep = ": ";
	size_t used;
	int i;

	used = snprintf(buf, len, "p2p: %s", rep->ready ? "ready" : "not ready");
	for (i = 0; i < rep->nr && used < len; i++) {
		if (rep->r[i].status != DD_FAIL)
			continue;
		used += snprintf(buf + used, len - used, "%s%s", sep,
				 rep->r[i].reason);
		sep = "; ";
	}
}

/* ---- text --------------------------------------------------------------- */

static const char *const text_status[] = {
	[DD_OK] = "ok", [DD_WARN] = "warning", [DD_FAIL] = "FAIL",
	[DD_SKIP] = "skip",
};

void dd_print_text(const struct dd_report *rep)
{
	char line[DD_MAX_RESULTS * 340];
	int i;

	printf("dmabuf-doctor %s: %s, gpu=%s (provider %s, device %d)\n\n",
	       PACKAGE_VERSION, rep->opts.target, rep->opts.gpu,
	       rep->f.prov_name, rep->opts.gpu_dev);
	for (i = 0; i < rep->nr; i++) {
		const struct dd_result *r = &rep->r[i];

		printf("%-8s %-19s %s\n", text_status[r->status], r->id,
		       r->reason);
		if (r->fix[0] && (r->status == DD_FAIL || r->status == DD_WARN))
			printf("%-8s %-19s fix: %s\n", "", "", r->fix);
	}
	verdict(rep, line, sizeof(line));
	printf("\n%s\n", line);
}

/* ---- JSON --------------------------------------------------------------- */

struct jw {
	int depth;
	bool comma[8];
};

/* the engine's escaping (results.h): a path of any bytes is valid UTF-8 */
static void jw_string(const char *s)
{
	char ch[DBR_JSON_CHAR_MAX];

	putchar('"');
	while (*s) {
		dbr_json_char(&s, ch);
		fputs(ch, stdout);
	}
	putchar('"');
}

/* a comma and indentation before the next member, then its key */
static void jw_key(struct jw *w, const char *key)
{
	if (w->comma[w->depth])
		putchar(',');
	printf("\n%*s", 2 * w->depth, "");
	w->comma[w->depth] = true;
	if (key) {
		jw_string(key);
		fputs(": ", stdout);
	}
}

static void jw_open(struct jw *w, const char *key, char brace)
{
	jw_key(w, key);
	putchar(brace);
	w->comma[++w->depth] = false;
}

static void jw_close(struct jw *w, char brace)
{
	bool had = w->comma[w->depth--];

	if (had)
		printf("\n%*s", 2 * w->depth, "");
	putchar(brace);
}

/* a string, or null for NULL and "" */
static void jw_str(struct jw *w, const char *key, const char *val)
{
	jw_key(w, key);
	if (val && val[0])
		jw_string(val);
	else
		fputs("null", stdout);
}

static void jw_long(struct jw *w, const char *key, long val, bool known)
{
	jw_key(w, key);
	if (known)
		printf("%ld", val);
	else
		fputs("null", stdout);
}

static void jw_bool(struct jw *w, const char *key, bool val)
{
	jw_key(w, key);
	fputs(val ? "true" : "false", stdout);
}

/* "ok", the errno's name, or null when the step was not attempted */
static void jw_step(struct jw *w, const char *key, int err)
{
	jw_str(w, key, err == DD_NOT_TRIED ? NULL : err ? dd_errname(err) : "ok");
}

static void json_kernel(struct jw *w, const struct dd_facts *f)
{
	jw_open(w, "kernel", '{');
	jw_str(w, "release", f->release);
	jw_long(w, "io_uring_disabled", f->io_uring_disabled,
		f->io_uring_disabled >= 0);
	jw_step(w, "ring", f->ring_err);
	jw_str(w, "ring_flags", f->ring_flags);
	jw_step(w, "series_probe", f->probe_err);
	jw_step(w, "registration", f->reg_err);
	jw_str(w, "config_source", f->kconfig_src);
	jw_str(w, "pci_p2pdma", dd_kconf_name(f->kc_p2pdma));
	jw_str(w, "dmabuf_token", dd_kconf_name(f->kc_token));
	jw_close(w, '}');
}

static void json_device(struct jw *w, const struct dd_report *rep)
{
	const struct dd_facts *f = &rep->f;
	bool blk = f->t.is_blkdev;

	jw_open(w, "device", '{');
	jw_str(w, "path", rep->opts.target);
	jw_str(w, "kind", f->stat_err ? NULL : f->kind);
	jw_str(w, "name", f->t.name);
	jw_bool(w, "nvme_namespace", f->t.is_nvme_ns);
	jw_bool(w, "partition", f->t.is_partition);
	jw_bool(w, "multipath_head", f->mpath_head);
	jw_str(w, "transport", f->transport);
	jw_step(w, "odirect_open", f->open_err);
	jw_bool(w, "read_only", f->read_only);
	jw_long(w, "logical_block_size", f->lbs, blk && f->lbs > 0);
	jw_long(w, "max_sectors_kb", f->max_kb, blk && f->max_kb > 0);
	jw_long(w, "max_hw_sectors_kb", f->max_hw_kb, blk && f->max_hw_kb > 0);
	jw_str(w, "pci", f->nvme_pci);
	jw_long(w, "numa_node", f->nvme_numa, f->nvme_pci[0] && f->nvme_numa >= 0);
	jw_close(w, '}');
}

static void json_iommu(struct jw *w, const struct dd_facts *f)
{
	jw_open(w, "iommu", '{');
	jw_long(w, "groups", f->iommu_groups, f->iommu_groups >= 0);
	jw_long(w, "group", f->iommu_group, f->iommu_group >= 0);
	jw_str(w, "type", f->iommu_type);
	jw_str(w, "cmdline", f->cmdline_iommu);
	jw_str(w, "default", f->iommu_default);
	jw_close(w, '}');
}

static void json_gpu(struct jw *w, const struct dd_report *rep)
{
	const struct dd_facts *f = &rep->f;

	jw_open(w, "gpu", '{');
	jw_str(w, "requested", rep->opts.gpu);
	jw_str(w, "provider", f->prov_name);
	jw_long(w, "dev", rep->opts.gpu_dev, true);
	jw_long(w, "devices", f->gpu_count, f->gpu_count >= 0);
	jw_step(w, "alloc", f->alloc_err);
	jw_step(w, "export", f->export_err);
	jw_str(w, "exporter", f->exporter);
	jw_long(w, "export_bytes", (long)f->export_bytes, !f->export_err);
	jw_str(w, "pci", f->gpu_pci);
	jw_long(w, "numa_node", f->gpu_numa, f->gpu_pci[0] && f->gpu_numa >= 0);
	jw_close(w, '}');
}

static void json_rest(struct jw *w, const struct dd_facts *f)
{
	jw_open(w, "topology", '{');
	jw_str(w, "relation", f->topo_na ? "not-applicable" :
			      dbr_dist_name(f->topo));
	jw_str(w, "via", f->topo_via);
	jw_close(w, '}');
	jw_open(w, "limits", '{');
	jw_long(w, "regbuf_max_bytes", (long)DBR_REGBUF_MAX_BYTES, true);
	jw_long(w, "maps_per_device", DBR_MAX_MAPS_PER_DEV, true);
	jw_long(w, "udmabuf_size_limit_mb", f->udmabuf_limit_mb,
		f->udmabuf_limit_mb > 0);
	jw_close(w, '}');
}

static void json_checks(struct jw *w, const struct dd_report *rep)
{
	int i;

	jw_open(w, "checks", '[');
	for (i = 0; i < rep->nr; i++) {
		const struct dd_result *r = &rep->r[i];

		jw_open(w, NULL, '{');
		jw_str(w, "id", r->id);
		jw_str(w, "status", dd_status_name(r->status));
		jw_str(w, "reason", r->reason);
		jw_str(w, "fix", r->fix);
		jw_close(w, '}');
	}
	jw_close(w, ']');
}

static void json_reasons(struct jw *w, const struct dd_report *rep)
{
	int i;

	jw_open(w, "reasons", '[');
	for (i = 0; i < rep->nr; i++)
		if (rep->r[i].status == DD_FAIL)
			jw_str(w, NULL, rep->r[i].reason);
	jw_close(w, ']');
}

void dd_print_json(const struct dd_report *rep)
{
	char line[DD_MAX_RESULTS * 340];
	struct jw w = { 0 };

	putchar('{');
	w.depth = 1;
	jw_long(&w, "schema", DD_SCHEMA_VERSION, true);
	jw_str(&w, "tool", "dmabuf-doctor");
	jw_str(&w, "version", PACKAGE_VERSION);
	jw_bool(&w, "ready", rep->ready);
	verdict(rep, line, sizeof(line));
	jw_str(&w, "verdict", line);
	json_reasons(&w, rep);
	json_checks(&w, rep);
	jw_open(&w, "facts", '{');
	json_kernel(&w, &rep->f);
	json_device(&w, rep);
	json_iommu(&w, &rep->f);
	json_gpu(&w, rep);
	json_rest(&w, &rep->f);
	jw_close(&w, '}');
	jw_close(&w, '}');
	putchar('\n');
}
