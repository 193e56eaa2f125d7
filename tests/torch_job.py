"""A small training job, profiled on CPU with tracewh's trace handler: what the torch tests run
as one process per rank. A rank of a world of several joins a gloo process group (a file://
rendezvous: no port to race for), and the handler is given no rank: it finds it there.

    python tests/torch_job.py WAREHOUSE --run RUN [--world-size N --rank R --rendezvous FILE]
        [--keep DIR] [--spool DIR] [--lock-timeout S] [--cycles N]

Prints the number of steps it trained, so a test sees the loop went on to the end.
"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

from tracewh.torch import trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 2  # steps of one profiler cycle


def main():
    args = _arguments()
    torch.set_num_threads(1)  # ranks share the machine's cores
    torch.manual_seed(args.rank)
    if args.world_size > 1:
        dist.init_process_group("gloo", init_method=f"file://{args.rendezvous}",
                                rank=args.rank, world_size=args.world_size)
    handler = trace_handler(args.warehouse, run=args.run, phase="train", tags={"model": "mlp"},
                            spool_dir=args.spool, keep_dir=args.keep,
                            lock_timeout=args.lock_timeout)
    print(train(handler, args.cycles), flush=True)
    if args.world_size > 1:
        dist.destroy_process_group()


def train(on_trace_ready, cycles):
    """Train a two-layer MLP for `cycles` profiler cycles; return the steps done."""
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = cycles * (WAIT + WARMUP + ACTIVE)
    done = 0
    cycle = schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=cycles)
    with profile(activities=[ProfilerActivity.CPU], schedule=cycle,
                 on_trace_ready=on_trace_ready) as prof:
        for _ in range(steps):
            loss = model(torch.randn(16, 32)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            if dist.is_initialized():
                for parameter in model.parameters():
                    dist.all_reduce(parameter.grad)
            optimizer.step()
            prof.step()
            done += 1
    return done


def _arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse")
    parser.add_argument("--run", required=True)
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--rendezvous")
    parser.add_argument("--keep")
    parser.add_argument("--spool")
    parser.add_argument("--lock-timeout", type=float, default=30.0)
    parser.add_argument("--cycles", type=int, default=3)
    return parser.parse_args()


if __name__ == "__main__":
    main()
