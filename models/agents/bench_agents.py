"""Gradient-step time of the relational and simplicial agents on bridge BoxWorld batches (Clift et al.,
ICLR 2020, Appendix C: 35 ms vs 80 ms per gradient step, a ratio of 2.3, on the paper's GPU set-up).

    python -m models.agents.bench_agents [--batch-sizes 1280 256] [--repeats 10] [--threads 2]

Per batch size B: random uint8 observations [B, 7, 10, 3] (the paper's 7x9 board plus the inventory
column), random actions, advantages and returns; one forward and backward pass of an actor-critic loss
(policy gradient + 0.5 value MSE - 0.005 entropy) per timing; the median over ``repeats`` after
``warmup`` untimed steps, the two agents taking turns. Prints one line per (agent, B), the simplicial /
relational ratio per B, and a final JSON line with every figure.

Beside the times, the floating-point operations of one such step in matrix products (``mm``, ``bmm``, ``addmm``,
convolutions; forward and backward, counted by ``torch.utils.flop_counter``; the elementwise work, such as the
triple products of eq. (11), is not counted) and their simplicial / relational ratio: the time ratio can come
near that ratio by doing the same products faster, and can go below it only by doing fewer of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import torch

from harness.bench_args import add_timing_arguments, at_least, bench_parser, parse_timing_arguments
from models.agents.shell import AgentShell
from models.relational.shipped import shipped_model_cfg
from models.step_timing import median_step_ms, step_gflop

AGENTS = ("relational", "simplicial")
OBSERVATION = (7, 10, 3)
NUM_ACTIONS = 4

def actor_critic_loss(logits: torch.Tensor, value: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor,
                      returns: torch.Tensor) -> torch.Tensor:
    """A policy-gradient-like loss: -log pi(a) A + 0.5 (V - R)^2 - 0.005 H(pi), averaged over the batch."""
    log_probs = torch.log_softmax(logits, dim=-1)  # [B, A]
    chosen = log_probs.gather(1, actions[:, None]).squeeze(1)  # [B]
    entropy = -(log_probs.exp() * log_probs).sum(-1)  # [B]
    return (-(chosen * advantages) + 0.5 * (value - returns).square() - 0.005 * entropy).mean()


def gradient_steps(agents: dict[str, AgentShell], batch: int, device: torch.device) -> dict[str, Callable[[], None]]:
    """One forward + backward pass of each agent, all on the same random batch of ``batch``."""
    gen = torch.Generator().manual_seed(batch)
    obs = torch.randint(0, 256, (batch, *OBSERVATION), dtype=torch.uint8, generator=gen).to(device)
    actions = torch.randint(0, NUM_ACTIONS, (batch,), generator=gen).to(device)
    advantages, returns = torch.randn(batch, generator=gen).to(device), torch.randn(batch, generator=gen).to(device)

    def gradient_step(agent: AgentShell) -> Callable[[], None]:
        def step() -> None:
            agent.zero_grad(set_to_none=True)
            logits, value = agent(obs)
            actor_critic_loss(logits, value, actions, advantages, returns).backward()
        return step

    return {name: gradient_step(agent) for name, agent in agents.items()}


def time_steps(agents: dict[str, AgentShell], batch: int, repeats: int, warmup: int,
               device: torch.device) -> dict[str, float]:
    """Median milliseconds of one forward + backward pass of each agent on the same random batch."""
    return median_step_ms(gradient_steps(agents, batch, device), repeats, warmup, device)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = bench_parser("models.agents.bench_agents", __doc__.split("\n\n")[0])
    parser.add_argument("--batch-sizes", type=at_least(1), nargs="+", default=[1280, 256])
    add_timing_arguments(parser, repeats=10, warmup=3, threads=2, threads_help="torch intra-op threads (CPU)")
    args, device = parse_timing_arguments(parser, argv)
    agents = {name: AgentShell(shipped_model_cfg(name), None, OBSERVATION, NUM_ACTIONS).to(device) for name in AGENTS}
    figures: dict[str, object] = {"device": str(device), "threads": args.threads, "observation": list(OBSERVATION),
                                  "repeats": args.repeats, "torch": torch.__version__, "ms": {}, "ratio": {},
                                  "matmul_gflop": {}, "matmul_gflop_ratio": {}}
    for batch in args.batch_sizes:
        ms = time_steps(agents, batch, args.repeats, args.warmup, device)
        ratio = ms["simplicial"] / ms["relational"]
        for name, value in ms.items():
            print(f"{name:>10}  B={batch:<5d}  {value:8.1f} ms per forward + backward")
        print(f"{'ratio':>10}  B={batch:<5d}  simplicial / relational = {ratio:.2f}  (paper: 80 / 35 = 2.3)")
        figures["ms"][str(batch)] = {name: round(value, 2) for name, value in ms.items()}  # type: ignore[index]
        figures["ratio"][str(batch)] = round(ratio, 3)  # type: ignore[index]
        gflop = {name: step_gflop(step) for name, step in gradient_steps(agents, batch, device).items()}
        floor = gflop["simplicial"] / gflop["relational"]
        print(f"{'products':>10}  B={batch:<5d}  " + "  ".join(f"{n} {g:.2f} GFLOP" for n, g in gflop.items())
              + f"  simplicial / relational = {floor:.2f}")
        figures["matmul_gflop"][str(batch)] = {n: round(g, 3) for n, g in gflop.items()}  # type: ignore[index]
        figures["matmul_gflop_ratio"][str(batch)] = round(floor, 3)  # type: ignore[index]
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
