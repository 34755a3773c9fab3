#!/usr/bin/env python3
"""One scripts/perf results directory from several one-repetition runs, so
that something without fio can run between repetitions and be paired with
each: scripts/gpu-proof bounce runs the ceiling loop (ceiling.c) after each
repetition of its 1 MiB cases, and the ceiling moves as much from one run
to the next as the engine does (H200, zram, 1 MiB reads at one thread: 3.85
to 5.69 GB/s in three calls minutes apart), so a ceiling measured once
beside five repetitions says little about any of them.

Repetition i of OUT is the run in the i-th DIR. Each DIR's ceiling.txt (the
ceiling tool's lines, where the repetition had them) goes into
OUT/ceiling.json as {"read": {"i": IOPS}, "write": {...}}, for
bounce_table.py to pair with the engine's repetition i. OUT/results.json is
then reported with scripts/perf --from OUT.

usage: merge_reps.py OUT DIR...
"""
import json
import os
import re
import sys

# ceiling.c's line: "ceiling read /dev/zram0: 4 threads, ...: 11.60 GB/s, 11067 IOPS (3.0 s)"
CEILING = re.compile(r"^ceiling (read|write) .*: [0-9.]+ GB/s, ([0-9]+) IOPS ")


def ceilings(path):
    """{"read": IOPS, "write": IOPS} from one ceiling.txt ({} without one)"""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                m = CEILING.match(line.strip())
                if m:
                    out[m.group(1)] = int(m.group(2))
    except OSError:
        pass
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out, dirs = argv[0], argv[1:]
    meta, records, ceil = None, [], {}
    for i, d in enumerate(dirs, 1):
        try:
            with open(os.path.join(d, "results.json")) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("merge_reps.py: %s: %s" % (d, e), file=sys.stderr)
            return 1
        meta = meta or doc["meta"]
        for r in doc["records"]:
            if r.get("rep", 1) != 1:
                print("merge_reps.py: %s has more than one repetition" % d,
                      file=sys.stderr)
                return 1
            r["rep"] = i
            records.append(r)
        for kind, iops in ceilings(os.path.join(d, "ceiling.txt")).items():
            ceil.setdefault(kind, {})[str(i)] = iops
    meta["repetitions"] = len(dirs)
    meta["merged from"] = " ".join(dirs)
    title = re.sub(r", 1 rep\)$", ", %d reps)" % len(dirs), doc.get("title", ""))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "records": records,
                   "title": title}, f, indent=1)
    with open(os.path.join(out, "ceiling.json"), "w") as f:
        json.dump(ceil, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
