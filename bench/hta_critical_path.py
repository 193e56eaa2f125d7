"""HTA's per-rank critical path breakdown of every ProfilerStep of one trace (the whole trace
when it has none), as JSON: the reference figures of tests/data/critical_path/hta.toml.
Regular expressions after the trace are HTA's data_load_events (HTA >= 0.6, which has the
data_loading class and the runtime-lock chain; the figures are 0.6.1's, which is not on
PyPI: install it from its repository's tag v0.6.1).

Run it with HolisticTraceAnalysis in its own environment, never tracewh's (0.6.1 from a
checkout of the tag; the bench's timing installs 0.5.0 from PyPI, see bench/run.py):

    python -m venv /tmp/hta && /tmp/hta/bin/pip install "pandas<3" "numpy<2.3" networkx \
        plotly pydot psutil pyyaml && /tmp/hta/bin/pip install --no-deps ./HolisticTraceAnalysis
    /tmp/hta/bin/python bench/hta_critical_path.py TRACE DataLoader data_loading copy_batch_to_gpu
"""

import json
import logging
import shutil
import sys
import tempfile
import time

from hta.trace_analysis import TraceAnalysis


def main(path, data_load_events):
    logging.disable(logging.WARNING)
    folder = tempfile.mkdtemp()
    shutil.copy(path, folder)
    analysis = TraceAnalysis(trace_dir=folder)
    rank = next(iter(analysis.t.traces))
    names = analysis.t.symbol_table.get_sym_id_map()
    steps = sorted(name for name in names if name.startswith("ProfilerStep#"))
    out = []
    for instance in range(max(len(steps), 1)):
        started = time.perf_counter()
        loading = {"data_load_events": data_load_events} if data_load_events else {}
        graph, ok = analysis.critical_path_analysis(
            rank=rank, annotation="ProfilerStep" if steps else "", instance_id=instance,
            **loading)
        seconds = time.perf_counter() - started
        frame = graph.get_critical_path_breakdown()
        sums = frame.groupby("bound_by")["duration"].sum().to_dict()
        out.append({"instance": instance, "ok": bool(ok), "seconds": round(seconds, 3),
                    "breakdown_us": {k: int(v) for k, v in sums.items() if k},
                    "edges": int(len(frame))})
    print(json.dumps({"trace": path, "rank": int(rank), "steps": out}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
