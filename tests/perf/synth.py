"""Synthetic scripts/perf results for the perf tests: a results.json whose
figures are exactly the ones asked, so a test knows what the judgement
must be. Used as a module (from the tests' Python) and as a command:

  synth.py DIR SEED SPEC...   SPEC = case-id=IOPS*SCALE/NOISE/N
      N repetitions of the case at IOPS x SCALE, each off by a uniform
      random fraction within +-NOISE (seeded), p99 latency the inverse.
      N = 0 makes every repetition a failed fio run.
"""
import json
import os
import random
import sys


def record(cid, rep, iops, bs=4096):
    job, _, impl = cid.partition(" ")
    impl, _, transfer = impl.partition(":")
    rec = {"id": cid, "case": {"job": job, "impl": impl,
                               "transfer": transfer or None,
                               "iodepth": None, "bs": None},
           "rep": rep, "wall_s": 0.5}
    if iops is None:
        rec["error"] = "fio exit 1 synthetic failure"
        return rec
    rec["summary"] = {"iops": iops, "bw_bytes": iops * bs, "ios": int(iops),
                      "cpu_us_per_io": 2.0, "run_cpu_us_per_io": 3.0,
                      "clat_mean_us": 1e6 / iops, "clat_p50_us": 1e6 / iops,
                      "clat_p99_us": 2e6 / iops, "clat_p99.9_us": 3e6 / iops,
                      "lat_mean_us": 1.1e6 / iops, "lat_p50_us": 1.1e6 / iops,
                      "lat_p99_us": 2.1e6 / iops, "lat_p99.9_us": 3.1e6 / iops,
                      "errors": [], "jobs": 1, "hosts": ["local"]}
    return rec


def write(d, records, title="synthetic", meta=None):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump({"meta": meta or {"command": "synthetic", "date":
                                    "2026-01-01T00:00:00"},
                   "records": records, "title": title}, f)


def main(argv):
    d, seed, specs = argv[0], int(argv[1]), argv[2:]
    rnd = random.Random(seed)
    records = []
    for spec in specs:
        cid, _, fig = spec.rpartition("=")
        base, rest = fig.split("*")
        scale, noise, n = rest.split("/")
        if int(n) == 0:
            records += [record(cid, r + 1, None) for r in range(2)]
            continue
        for r in range(int(n)):
            f = 1 + rnd.uniform(-float(noise), float(noise))
            records.append(record(cid, r + 1, float(base) * float(scale) * f))
    write(d, records)


if __name__ == "__main__":
    main(sys.argv[1:])
