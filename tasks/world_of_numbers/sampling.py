"""What a World of Numbers step tells and asks (Moskvichev & Liu 2021, Appendix B, Experiment 1, "Learning world
dynamics"): pixel values as instructions, pixels as queries, and the pictures of a world.

A world's n images of H x W pixels are numbered ``p = r * H * W + y * W + x`` (r the image's place in the tuple);
an instruction is (x, y, r, value), a query (x, y, r), an answer the pixel's value.

Per world and step, a number k of instructions is drawn uniformly from 0..K (K = ``first_instructions`` at t = 1,
``instructions`` after; both ends included, as the paper's "between 0 and 75"), and k pixels are drawn uniformly
without replacement from the n * H * W. The paper asks about "both observed and unobserved (75 pixels total)" and
no more; our scheme: of the Q queries, min(k, Q // 3) are drawn without replacement from this step's k instructed
pixels (group "observed") and the rest from the pixels not instructed at this step (group "unobserved"), all
distinct. When too few unobserved pixels remain (k near n * H * W), observed ones fill the gap; only a world with
fewer than Q pixels has padded queries. The queries are shuffled, so their order tells nothing of their group.
"""

from __future__ import annotations

import torch

from harness.streams import StreamStep

OBSERVED, UNOBSERVED = 0, 1


def uniform(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Uniform floats in [0, 1) drawn from ``generator`` (on its device), returned on the CPU."""
    return torch.rand(shape, generator=generator, device=generator.device).cpu()


def pixel_fields(pixels: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Pixel numbers int64 [...] -> their (x, y, r) int64 [..., 3]."""
    return torch.stack((pixels % width, (pixels // width) % height, pixels // (height * width)), dim=-1)


def tell_and_ask(images: torch.Tensor, limit: int, max_instructions: int, max_queries: int,
                 generator: torch.Generator) -> StreamStep:
    """One step's instructions and queries about worlds whose pixels are ``images`` bool [B, n, H, W].

    ``limit``: the most instructions a world may get at this step (at most ``max_instructions``, the padded I);
    ``max_queries``: Q, the queries of every world (at most n * H * W).
    """
    batch, _, height, width = images.shape
    values = images.reshape(batch, -1).long()  # [B, P]
    total = values.shape[1]
    told = torch.randint(0, limit + 1, (batch,), generator=generator, device=generator.device).cpu()  # [B]
    drawn = min(limit + max_queries, total)  # M: the pixels a step may tell or ask about
    order = uniform((batch, total), generator).topk(drawn, dim=1).indices  # [B, M] the start of a random permutation

    slots = torch.arange(max_instructions)  # [I]
    instruction_pixels = torch.zeros(batch, max_instructions, dtype=torch.long)  # [B, I]; rows past told[b]: padding
    kept = min(max_instructions, drawn)
    instruction_pixels[:, :kept] = order[:, :kept]
    instructions = torch.cat((pixel_fields(instruction_pixels, height, width),
                              values.gather(1, instruction_pixels).unsqueeze(-1)), dim=-1)  # [B, I, 4]
    instruction_mask = slots[None, :] < told[:, None]  # [B, I]

    # the first `observed` of the told pixels, then `unobserved` of the pixels after them in the permutation
    wanted = told.clamp(max=max_queries // 3)  # [B]
    unobserved = torch.minimum(max_queries - wanted, total - told)  # [B]
    observed = torch.minimum(told, max_queries - unobserved)  # [B]
    rows = torch.arange(max_queries)[None, :]  # [1, Q]
    is_observed = rows < observed[:, None]  # [B, Q]
    position = torch.where(is_observed, rows, told[:, None] + rows - observed[:, None]).clamp(max=drawn - 1)  # [B, Q]
    query_mask = rows < (observed + unobserved)[:, None]  # [B, Q]
    group = torch.where(is_observed, OBSERVED, UNOBSERVED)  # [B, Q]

    shuffle = (uniform((batch, max_queries), generator) + (~query_mask).float() * 2).argsort(dim=1)  # [B, Q]
    query_pixels = order.gather(1, position.gather(1, shuffle))  # [B, Q]
    return StreamStep(instructions=instructions, instruction_mask=instruction_mask,
                      queries=pixel_fields(query_pixels, height, width), query_mask=query_mask.gather(1, shuffle),
                      answers=values.gather(1, query_pixels), query_group=group.gather(1, shuffle))


def ask_everything(images: torch.Tensor, max_instructions: int) -> StreamStep:
    """A step that tells nothing and asks every pixel once, in pixel order (for reconstructions): queries
    [B, n * H * W, 3], all in group "unobserved"; the instruction tensors keep their padded shape [B, I, 4]."""
    batch, _, height, width = images.shape
    values = images.reshape(batch, -1).long()  # [B, P]
    pixels = torch.arange(values.shape[1]).expand(batch, -1)  # [B, P]
    return StreamStep(instructions=torch.zeros(batch, max_instructions, 4, dtype=torch.long),
                      instruction_mask=torch.zeros(batch, max_instructions, dtype=torch.bool),
                      queries=pixel_fields(pixels, height, width).contiguous(),
                      query_mask=torch.ones_like(values, dtype=torch.bool), answers=values,
                      query_group=torch.full_like(values, UNOBSERVED))


def render(values: torch.Tensor, count: int, height: int, width: int) -> torch.Tensor:
    """Per-pixel values [B, n * H * W] (probabilities in [0, 1], or 0/1 ints or bools) -> uint8 [B, H, n * W],
    the n images side by side (0 black, 255 white), on the CPU."""
    if values.dim() != 2 or values.shape[1] != count * height * width:
        raise ValueError(f"render expects values [B, {count * height * width}], got {list(values.shape)}")
    grey = (values.detach().cpu().float().clamp(0, 1) * 255).round().to(torch.uint8)  # [B, P]
    return grey.reshape(-1, count, height, width).permute(0, 2, 1, 3).reshape(-1, height, count * width)
