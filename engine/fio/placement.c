// SPDX-License-Identifier: MIT
/*
 * Where a thread runs: gpu_dev_ids=auto (the GPU nearest the PCI controller
 * of the thread's files, ties spread over every thread of the run) and
 * gpu_cpus=auto (the CPUs of that GPU's NUMA node). Each answer comes back
 * with the words that say why; the glue applies it and prints it.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fio.h"

#include "dbr_config.h"
#include "peers.h"
#include "placement.h"
#include "provider.h"
#include "topology.h"


static bool dbr_user_pinned(struct thread_data *t)
{
#ifdef CONFIG_LIBNUMA
	if (fio_option_is_set(&t->o, numa_cpunodes))
		return true;
#endif
	return fio_option_is_set(&t->o, cpumask);
}

/* The NUMA node of device dev and its CPU list; 0 or a negative errno. */
static int dbr_gpu_node_cpus(const struct gpu_provider *p, int dev,
			     int *node, char *cpus, size_t len)
{
	struct dbr_pci_fn *fn = malloc(sizeof(*fn));
	char raw[64];
	int ret = p->pci_addr ? 0 : -ENOSYS;

	*node = -1;
	if (!fn)
		return -ENOMEM;
	if (!ret)
		ret = p->pci_addr(dev, raw, sizeof(raw));
	if (!ret)
		ret = dbr_pci_fn_get(dbr_sysfs_root(), raw, fn);
	if (!ret) {
		*node = fn->numa;
		ret = dbr_numa_cpulist(dbr_sysfs_root(), fn->numa, cpus, len);
	}
	free(fn);
	return ret;
}

int dbr_cpus_plan(struct thread_data *t, bool cpus_auto,
		  const struct gpu_provider *p, int dev, cpu_set_t *set,
		  char *said, size_t len)
{
	char cpus[256];
	int node, cpu;

	said[0] = '\0';
	if (!cpus_auto)
		return -ENOENT;
	if (dbr_user_pinned(t)) {
		snprintf(said, len, "CPUs as cpus_allowed says");
		return -EEXIST;
	}
	if (dbr_gpu_node_cpus(p, dev, &node, cpus, sizeof(cpus)) < 0) {
		snprintf(said, len, "CPUs unpinned: the %s device's NUMA node is not known",
			 p->name);
		return -ENOENT;
	}
	CPU_ZERO(set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (dbr_cpu_listed(cpus, cpu))
			CPU_SET(cpu, set);
	snprintf(said, len, "CPUs %.96s of node %d", cpus, node);
	return 0;
}

/* gpu_dev_ids=auto: the GPU nearest the controller of each thread's files */

/* every device's PCI function, as far as the runtime and sysfs tell */
struct dbr_gpus {
	const struct gpu_provider *prov;
	const char *gpu;	/* the placing thread's gpu= value */
	bool cpus_auto;		/* its gpu_cpus=auto */
	struct dbr_pci_fn *fn;
	int count;
	int known;	/* devices with a PCI path */
};

/* controllers of one thread's files the line counts (all of them count for the choice) */
#define DBR_MAX_CTRLS	16

/* where one thread stands from the GPUs, and why */
struct dbr_place {
	enum dbr_dist dist[DBR_TOPO_MAX_GPUS];	/* to each GPU */
	int nr_ctrls;		/* distinct PCI controllers of its files */
	char disk[64];		/* the first of them: its disk and address */
	char bdf[DBR_BDF_LEN];
	bool via_fs;		/* reached through a filesystem */
	const char *lost;	/* the first file on no PCI controller */
	/* the first disk as a multipath head node: its paths, and per GPU
	 * the index of the one nearest it */
	int mpath_paths;
	struct dbr_blk_path_name {
		char name[16];
		char bdf[DBR_BDF_LEN];
	} path[DBR_MAX_PATHS];
	int near[DBR_TOPO_MAX_GPUS];
};

static int dbr_gpus_get(const struct gpu_provider *p, int count,
			struct dbr_gpus *g)
{
	char raw[64];
	int i;

	g->prov = p;
	g->count = count < DBR_TOPO_MAX_GPUS ? count : DBR_TOPO_MAX_GPUS;
	g->known = 0;
	g->fn = calloc((size_t)g->count, sizeof(*g->fn));
	if (!g->fn)
		return -ENOMEM;
	for (i = 0; i < g->count; i++) {
		g->fn[i].numa = -1;
		if (g->count > 1 && p->pci_addr &&
		    !p->pci_addr(i, raw, sizeof(raw)) &&
		    !dbr_pci_fn_get(dbr_sysfs_root(), raw, &g->fn[i]))
			g->known++;
	}
	return 0;
}

static bool dbr_ctrl_seen(char (*seen)[DBR_BDF_LEN], int n, const char *bdf)
{
	while (n--)
		if (!strcmp(seen[n], bdf))
			return true;
	return false;
}

/* The first of a thread's disks, as the line names it. */
static void dbr_place_first(struct dbr_place *pl, const struct dbr_gpus *g,
			    const struct dbr_blk_ctrl *c, bool via_fs)
{
	int i;

	snprintf(pl->disk, sizeof(pl->disk), "%s", c->disk);
	snprintf(pl->bdf, sizeof(pl->bdf), "%s", c->pci.bdf);
	pl->via_fs = via_fs;
	pl->mpath_paths = c->nr_paths ? c->mpath_paths : 0;
	for (i = 0; i < c->nr_paths; i++) {
		snprintf(pl->path[i].name, sizeof(pl->path[i].name), "%s",
			 c->path[i].name);
		snprintf(pl->path[i].bdf, sizeof(pl->path[i].bdf), "%s",
			 c->path[i].pci.bdf);
	}
	for (i = 0; i < g->count; i++)
		dbr_dist_to_blk(&g->fn[i], c, &pl->near[i]);
}

/* Thread t's distance to each GPU: the farthest of its files' controllers. */
static void dbr_place_ctrls(struct thread_data *t, const struct dbr_gpus *g,
			    struct dbr_blk_ctrl *c, char (*seen)[DBR_BDF_LEN],
			    struct dbr_place *pl)
{
	struct fio_file *f;
	unsigned int i;

	for_each_file(t, f, i) {
		bool via_fs = false;

		if (dbr_blk_ctrl_of_file(dbr_sysfs_root(), f->file_name, c,
					 &via_fs) || !c->pci.sys[0]) {
			pl->lost = pl->lost ? pl->lost : f->file_name;
			continue;
		}
		dbr_gpu_dists_add(g->fn, g->count, c, pl->dist);
		if (pl->nr_ctrls == DBR_MAX_CTRLS ||
		    dbr_ctrl_seen(seen, pl->nr_ctrls, c->pci.bdf))
			continue;
		if (!pl->nr_ctrls)
			dbr_place_first(pl, g, c, via_fs);
		memcpy(seen[pl->nr_ctrls++], c->pci.bdf, DBR_BDF_LEN);
	}
}


/*
 * Where thread t stands: its distance to each GPU. No controllers or no
 * GPU PCI paths: every distance is unknown, which makes it round-robin.
 */
static int dbr_place(struct thread_data *t, const struct dbr_gpus *g,
		     struct dbr_place *pl)
{
	char (*seen)[DBR_BDF_LEN] = calloc(DBR_MAX_CTRLS, sizeof(*seen));
	struct dbr_blk_ctrl *c = malloc(sizeof(*c));
	int i, ret = seen && c ? 0 : -ENOMEM;

	memset(pl, 0, sizeof(*pl));
	for (i = 0; i < g->count; i++)
		pl->dist[i] = DBR_DIST_SWITCH;
	if (!ret && g->known && dbr_files_readable(t))
		dbr_place_ctrls(t, g, c, seen, pl);
	if (!pl->nr_ctrls)
		for (i = 0; i < g->count; i++)
			pl->dist[i] = DBR_DIST_UNKNOWN;
	free(c);
	free(seen);
	return ret;
}


/* Does t take part in td's gpu_dev_ids=auto: this engine, auto, td's provider? */
static bool dbr_auto_peer(struct thread_data *t, struct thread_data *td,
			  const struct dbr_gpus *g)
{
	const char *ids, *gpu;
	char why[512];

	if (t == td)
		return true;
	if (!dbr_same_engine(t, td))
		return false;
	ids = dbr_peer_opt(t, td, "gpu_dev_ids", "auto");
	if (!ids || strcasecmp(ids, "auto"))
		return false;
	gpu = dbr_peer_opt(t, td, "gpu", g->gpu);
	if (!gpu || !strcasecmp(gpu, "auto"))
		return !strcasecmp(g->gpu, "auto") ||
		       gpu_provider_auto(why, sizeof(why)) == g->prov;
	/* else a provider's name (the registry's) */
	return gpu_provider_by_name(gpu) == g->prov;
}

/* gpu_dev_ids=auto for the threads beside td: thread number first + i */
struct dbr_plan {
	unsigned int first;
	unsigned int nr;
	int *dev;		/* -1: not placed by auto beside td */
};

/* a thread's place in the order auto goes through: job, then thread index */
struct dbr_rank {
	unsigned int job;	/* the window index of its job's first thread */
	unsigned int sub;	/* its thread index in the job */
	unsigned int idx;	/* its window index */
};

static int dbr_rank_cmp(const void *a, const void *b)
{
	const struct dbr_rank *x = a, *y = b;

	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	return (x->sub > y->sub) - (x->sub < y->sub);
}

/*
 * The window's threads in job order and, within a job, by thread index
 * (fio lists a job's numjobs clones after it, but numbers them from the
 * last down).
 */
static void dbr_plan_order(const struct dbr_plan *plan, struct dbr_rank *r)
{
	unsigned int i, job = 0;

	for (i = 0; i < plan->nr; i++) {
		struct thread_data *t = tnumber_to_td(plan->first + i);

		if (!t->subjob_number)
			job = i;
		r[i].job = job;
		r[i].sub = t->subjob_number;
		r[i].idx = i;
	}
	qsort(r, plan->nr, sizeof(*r), dbr_rank_cmp);
}

/*
 * The devices auto gives every thread that runs beside td (dbr_run_window)
 * with this engine, gpu_dev_ids=auto and td's provider, one job after the
 * other (dbr_plan_order, dbr_gpu_assign). Every one of those threads works
 * the same plan out from fio's thread list, so no thread needs to hear
 * from another, whichever starts first.
 */
static int dbr_plan_run(struct thread_data *td, const struct dbr_gpus *g,
			struct dbr_plan *plan)
{
	struct dbr_gpu_want *want = NULL;
	struct dbr_rank *rank = NULL;
	enum dbr_dist *dist = NULL;
	struct dbr_place *pl = malloc(sizeof(*pl));
	unsigned int last, k;
	int *dev = NULL, ret = -ENOMEM;

	dbr_run_window(td, &plan->first, &last);
	plan->nr = last + 1 - plan->first;
	plan->dev = calloc(plan->nr, sizeof(*plan->dev));
	dev = calloc(plan->nr, sizeof(*dev));
	want = calloc(plan->nr, sizeof(*want));
	rank = calloc(plan->nr, sizeof(*rank));
	dist = calloc((size_t)plan->nr * (size_t)g->count, sizeof(*dist));
	if (!pl || !plan->dev || !dev || !want || !rank || !dist)
		goto out;
	dbr_plan_order(plan, rank);
	for (k = 0; k < plan->nr; k++) {
		struct thread_data *t = tnumber_to_td(plan->first + rank[k].idx);
		enum dbr_dist *row = dist + (size_t)k * (size_t)g->count;

		want[k].stonewall = t->o.stonewall;
		if (!dbr_auto_peer(t, td, g))
			continue;
		ret = dbr_place(t, g, pl);
		if (ret < 0)
			goto out;
		memcpy(row, pl->dist, (size_t)g->count * sizeof(*row));
		want[k].dist = row;
	}
	ret = dbr_gpu_assign(want, (int)plan->nr, g->count, dev);
	for (k = 0; !ret && k < plan->nr; k++)
		plan->dev[rank[k].idx] = dev[k];
out:
	free(dist);
	free(rank);
	free(want);
	free(dev);
	free(pl);
	return ret;
}

/* ", hip 1,3 tie" for the GPUs at pl's closest class */
static void dbr_place_ties(const struct dbr_place *pl, const struct dbr_gpus *g,
			   char *buf, size_t len)
{
	enum dbr_dist best = pl->dist[0];
	int i, n = 0;

	if (dbr_dist_ties(pl->dist, g->count) < 2)
		return;
	for (i = 1; i < g->count; i++)
		if (pl->dist[i] < best)
			best = pl->dist[i];
	dbr_cat(buf, len, "; %s ", g->prov->name);
	for (i = 0; i < g->count; i++)
		if (pl->dist[i] == best)
			dbr_cat(buf, len, "%s%d", n++ ? "," : "", i);
	dbr_cat(buf, len, " tie, spread over the run");
}

static void dbr_place_why(const struct dbr_place *pl,
			  const struct dbr_gpus *g, int dev, char *buf,
			  size_t len)
{
	const char *prov = g->prov->name;
	int near = pl->mpath_paths ? pl->near[dev] : -1;

	if (g->count == 1) {
		snprintf(buf, len, "gpu=%s has one device", prov);
		return;
	}
	if (!g->known) {
		snprintf(buf, len, "round-robin: gpu=%s tells no PCI address for its devices",
			 prov);
		return;
	}
	if (!pl->nr_ctrls) {
		snprintf(buf, len, "round-robin: %s is on no PCI controller",
			 pl->lost ? pl->lost : "no file");
		return;
	}
	if (near >= 0)
		snprintf(buf, len, "%s to %s's path %s at %s (the nearest of %d)",
			 dbr_dist_name(pl->dist[dev]), pl->disk,
			 pl->path[near].name, pl->path[near].bdf,
			 pl->mpath_paths);
	else
		snprintf(buf, len, "%s to %s's controller %s",
			 dbr_dist_name(pl->dist[dev]), pl->disk, pl->bdf);
	dbr_cat(buf, len, "%s%s",
		pl->nr_ctrls > 1 ? " (the farthest of its files')" : "",
		pl->via_fs ? ", via the filesystem" : "");
	dbr_place_ties(pl, g, buf, len);
}

/* what one thread of the job got, for the job's line */
struct dbr_said {
	int dev;		/* -1: not placed */
	bool said;
	char why[256];
};

/* gpu_cpus=auto: what a thread's placement means for its CPUs, appended */
static void dbr_place_cpus(struct thread_data *t, const struct dbr_gpus *g,
			   int dev, char *why, size_t len)
{
	char said[160];
	cpu_set_t set;

	dbr_cpus_plan(t, g->cpus_auto, g->prov, dev, &set, said, sizeof(said));
	if (said[0])
		dbr_cat(why, len, "; %s", said);
}

/* Every thread of td's job (td and its numjobs clones), by clone index. */
static void dbr_place_job(struct thread_data *td, const struct dbr_gpus *g,
			  const struct dbr_plan *plan, struct dbr_said *s,
			  unsigned int n)
{
	struct dbr_place *pl = malloc(sizeof(*pl));
	unsigned int i;

	if (!pl)
		return;
	for (i = td->thread_number - 1; i < plan->first + plan->nr; i++) {
		struct thread_data *t = tnumber_to_td(i);
		int dev = plan->dev[i - plan->first];

		/* a clone's io_ops may not be loaded yet: it starts beside td */
		if (t != td && (!t->subjob_number || !dbr_same_engine(t, td)))
			break;
		if (t->subjob_number >= n || dev < 0 || dbr_place(t, g, pl) < 0)
			continue;
		s[t->subjob_number].dev = dev;
		dbr_place_why(pl, g, dev, s[t->subjob_number].why,
			      sizeof(s[0].why));
		dbr_place_cpus(t, g, dev, s[t->subjob_number].why,
			       sizeof(s[0].why));
	}
	free(pl);
}

/* "threads 0,2 -> hip 1": every thread with s[first]'s device and why */
static void dbr_say_group(struct dbr_said *s, unsigned int n,
			  unsigned int first, const char *prov, char *buf,
			  size_t len)
{
	unsigned int i, nr = 1;
	char ids[256];

	snprintf(ids, sizeof(ids), "%u", first);
	for (i = first + 1; i < n; i++) {
		if (s[i].said || s[i].dev != s[first].dev ||
		    strcmp(s[i].why, s[first].why))
			continue;
		s[i].said = true;
		nr++;
		dbr_cat(ids, sizeof(ids), ",%u", i);
	}
	dbr_cat(buf, len, "thread%s %s -> %s %d", nr > 1 ? "s" : "", ids,
		prov, s[first].dev);
}

/*
 * One line for the job: which device each thread got and why, e.g.
 * "threads 0,2 -> hip 1, threads 1,3 -> hip 3: same-switch, nvme0n1 at ...".
 */
static void dbr_say_places(struct thread_data *td, const struct dbr_gpus *g,
			   const struct dbr_plan *plan, char *out, size_t len)
{
	const char *prov = g->prov->name;
	unsigned int n = td->o.numjobs ? td->o.numjobs : 1, i;
	struct dbr_said *s = calloc(n, sizeof(*s));
	bool same = true;
	char line[768];

	out[0] = '\0';
	if (!s)
		return;
	for (i = 0; i < n; i++)
		s[i].dev = -1;
	dbr_place_job(td, g, plan, s, n);
	for (i = 1; i < n; i++)
		same = same && (s[i].dev < 0 || !strcmp(s[i].why, s[0].why));
	line[0] = '\0';
	for (i = 0; i < n; i++) {
		if (s[i].said || s[i].dev < 0)
			continue;
		s[i].said = true;
		dbr_cat(line, sizeof(line), "%s", line[0] ? ", " : "");
		dbr_say_group(s, n, i, prov, line, sizeof(line));
		if (!same)
			dbr_cat(line, sizeof(line), " (%s)", s[i].why);
	}
	snprintf(out, len, "%s%s%s", line, same ? ": " : "",
		 same ? s[0].why : "");
	free(s);
}

int dbr_place_auto(struct thread_data *td, const struct dbr_auto_ask *ask,
		   int *dev, char *line, size_t len)
{
	struct dbr_plan plan = { .dev = NULL };
	struct dbr_gpus g = { .gpu = ask->gpu, .cpus_auto = ask->cpus_auto };
	int ret;

	if (len)
		line[0] = '\0';
	ret = dbr_gpus_get(ask->prov, ask->count, &g);
	if (!ret)
		ret = dbr_plan_run(td, &g, &plan);
	if (!ret) {
		*dev = plan.dev[td->thread_number - 1 - plan.first];
		if (len)
			dbr_say_places(td, &g, &plan, line, len);
	}
	free(plan.dev);
	free(g.fn);
	return ret;
}
