"""Game of Life with interventions (Experiment 2): known patterns, the batched rule against a plain per-cell loop
for both boundaries, step 1's telling, interventions (after the generation, told with the new value, reflected
in the answers), determinism, the ``stream`` contract, the task.yaml profiles, and bad configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.streams import StreamStep, check_stream_info, check_stream_step
from tasks.game_of_life.generator import DEFAULTS, life_step
from tasks.game_of_life.task import GameOfLifeTask
from tests.task_yaml_checks import check_schema_rejects_as_task_does, profile_configs

TASK_YAML = Path(__file__).resolve().parents[1] / "tasks" / "game_of_life" / "task.yaml"


def make(**task: object) -> GameOfLifeTask:
    return GameOfLifeTask(OmegaConf.create({"seed": 0, "task": {"name": "game_of_life", **DEFAULTS, **task}}))


def board_of(cells: list[tuple[int, int]], size: int = 8) -> torch.Tensor:
    board = torch.zeros(1, size, size, dtype=torch.bool)  # [1, S, S]
    for x, y in cells:
        board[0, x, y] = True
    return board


def alive(board: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(x), int(y)) for x, y in board[0].nonzero()}


def naive_step(board: list[list[int]], torus: bool) -> list[list[int]]:
    """B3/S23 by a plain loop over the cells of one board."""
    size = len(board)
    nxt = [[0] * size for _ in range(size)]
    for x in range(size):
        for y in range(size):
            live = 0
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    if dx == dy == 0:
                        continue
                    u, v = x + dx, y + dy
                    if torus:
                        live += board[u % size][v % size]
                    elif 0 <= u < size and 0 <= v < size:
                        live += board[u][v]
            nxt[x][y] = int(live == 3 or (board[x][y] == 1 and live == 2))
    return nxt


def roll(task: GameOfLifeTask, batch: int, steps: int, seed: int = 0) -> list[StreamStep]:
    gen = torch.Generator().manual_seed(seed)
    worlds = task.reset(batch, gen, "train")
    out = []
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, gen, "train")
        out.append(step)
    return out


# the rule -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("boundary", ["torus", "dead"])
def test_blinker_oscillates_and_block_is_still(boundary):
    blinker = board_of([(3, 2), (3, 3), (3, 4)])
    once = life_step(blinker, boundary)
    assert alive(once) == {(2, 3), (3, 3), (4, 3)}
    assert torch.equal(life_step(once, boundary), blinker)
    block = board_of([(0, 0), (0, 1), (1, 0), (1, 1)] if boundary == "dead" else [(4, 4), (4, 5), (5, 4), (5, 5)])
    assert torch.equal(life_step(block, boundary), block)


def test_glider_on_the_torus_moves_by_one_one_every_four_generations():
    glider = board_of([(0, 1), (1, 2), (2, 0), (2, 1), (2, 2)])
    board = glider
    for generation in range(1, 33):
        board = life_step(board, "torus")
        if generation % 4 == 0:
            k = generation // 4
            assert torch.equal(board, torch.roll(glider, shifts=(k, k), dims=(1, 2))), generation
    assert torch.equal(board, glider)  # 32 generations: once round the 8 x 8 torus


def test_boundaries_differ_at_the_edge():
    edge = board_of([(0, 3), (0, 4), (0, 5)])  # a blinker along the edge x = 0
    assert alive(life_step(edge, "torus")) == {(7, 4), (0, 4), (1, 4)}  # the torus wraps round to x = 7
    assert alive(life_step(edge, "dead")) == {(0, 4), (1, 4)}  # no birth outside the board
    assert alive(life_step(life_step(edge, "dead"), "dead")) == set()
    corner = board_of([(0, 0), (0, 7), (7, 0), (7, 7)])  # neighbours of each other only on the torus
    assert alive(life_step(corner, "torus")) == alive(corner) and alive(life_step(corner, "dead")) == set()


@pytest.mark.parametrize("boundary", ["torus", "dead"])
@pytest.mark.parametrize("size", [5, 8])
def test_batched_rule_equals_a_plain_loop(boundary, size):
    gen = torch.Generator().manual_seed(size)
    boards = torch.rand(6, size, size, generator=gen) < 0.4  # [B, S, S]
    for _ in range(3):
        stepped = life_step(boards, boundary)
        for b in range(boards.shape[0]):
            assert stepped[b].int().tolist() == naive_step(boards[b].int().tolist(), boundary == "torus")
        boards = stepped


# the stream -----------------------------------------------------------------------------------------------------
def told_board(step: StreamStep, size: int) -> torch.Tensor:
    """The board written by step 1's instructions: [B, S, S] int64."""
    board = torch.full((step.instructions.shape[0], size, size), -1, dtype=torch.long)
    for b in range(board.shape[0]):
        for x, y, value in step.instructions[b][step.instruction_mask[b]].tolist():
            board[b, x, y] = value
    return board


def test_step_one_tells_the_whole_board():
    task = make(size=6, density=0.3)
    gen = torch.Generator().manual_seed(1)
    worlds = task.reset(5, gen, "train")
    worlds_after, step = task.step(worlds, 1, gen, "train")
    assert step.instruction_mask.all() and step.instructions.shape == (5, 36, 3)
    assert torch.equal(told_board(step, 6), worlds.board.long())
    assert torch.equal(worlds_after.board, worlds.board)  # step 1 is the initial board
    assert torch.equal(step.answers, worlds.board.reshape(5, 36).long())
    assert step.query_group.eq(0).all()
    assert step.queries[0].tolist() == [[x, y] for x in range(6) for y in range(6)]


def test_no_interventions_tells_nothing_after_step_one():
    task = make(size=6)
    steps = roll(task, 4, 5)
    previous = steps[0].answers.reshape(4, 6, 6).bool()
    for step in steps[1:]:
        assert not step.instruction_mask.any() and step.query_group.eq(0).all()
        assert torch.equal(step.answers.reshape(4, 6, 6).bool(), life_step(previous, "torus"))
        previous = step.answers.reshape(4, 6, 6).bool()


@pytest.mark.parametrize("boundary", ["torus", "dead"])
def test_interventions_flip_after_the_generation_and_are_told(boundary):
    size, most = 6, 5
    task = make(size=size, boundary=boundary, interventions=most)
    steps = roll(task, 200, 6, seed=2)
    counts = []
    previous = steps[0].answers.reshape(-1, size, size)
    for step in steps[1:]:
        check_stream_step("game_of_life", step, task.info, 200)
        answers, groups = step.answers.reshape(-1, size, size), step.query_group.reshape(-1, size, size)
        for b in range(answers.shape[0]):
            expected = naive_step(previous[b].tolist(), boundary == "torus")  # the generation first
            told = step.instructions[b][step.instruction_mask[b]].tolist()
            n = len(told)
            counts.append(n)
            assert step.instruction_mask[b, :n].all() and n <= most  # the real ones come first
            assert len({(x, y) for x, y, _ in told}) == n  # distinct cells
            for x, y, value in told:
                assert value == 1 - expected[x][y]  # a flip, told with the new value
                expected[x][y] = value
            assert answers[b].tolist() == expected  # the answers reflect the interventions
            assert {(x, y) for x, y in groups[b].nonzero().tolist()} == {(x, y) for x, y, _ in told}
        previous = answers
    frequencies = torch.bincount(torch.tensor(counts), minlength=most + 1).float() / len(counts)
    assert torch.allclose(frequencies, torch.full_like(frequencies, 1 / (most + 1)), atol=0.04)  # U{0..5}


def test_determinism_from_the_generator_seed():
    task = make(interventions=4)
    a, b, c = roll(task, 8, 6, seed=5), roll(task, 8, 6, seed=5), roll(task, 8, 6, seed=6)
    for one, two in zip(a, b, strict=True):
        for name in ("instructions", "instruction_mask", "answers", "query_group"):
            assert torch.equal(getattr(one, name), getattr(two, name))
    assert not torch.equal(a[0].answers, c[0].answers)


def test_full_step_and_render_picture_the_board():
    task = make(size=5, interventions=3)
    gen = torch.Generator().manual_seed(0)
    worlds = task.reset(3, gen, "test")
    for t in (1, 2):
        worlds, step = task.step(worlds, t, gen, "test")
    full = task.full_step(worlds)
    check_stream_step("game_of_life", full, task.info, 3)
    assert not full.instruction_mask.any() and torch.equal(full.answers, step.answers)
    image = task.render(full.answers.float())
    assert image.dtype == torch.uint8 and image.shape == (3, 5, 5)
    assert torch.equal(image == 255, worlds.board) and torch.equal(image == 0, ~worlds.board)
    assert task.render(torch.full((1, 25), 0.5)).eq(128).all()


@pytest.mark.parametrize("interventions", [0, 3, 64])
def test_contract_info_and_describe_data(interventions):
    task = make(interventions=interventions)
    check_stream_info("game_of_life", task.info)
    assert task.info["instruction_fields"] == [8, 8, 2] and task.info["query_fields"] == [8, 8]
    assert task.info["max_instructions"] == 64 and task.info["max_queries"] == 64
    assert task.info["query_groups"] == ["cell", "intervened"] and task.info["num_answers"] == 2
    for step in roll(task, 3, 4):
        check_stream_step("game_of_life", step, task.info, 3)
    data = task.describe_data()
    assert data["files"] == {} and "torus" in data["source"] and len(data["fingerprint"]) == 12
    assert data["fingerprint"] != make(interventions=interventions, boundary="dead").describe_data()["fingerprint"]


def test_task_yaml_profiles_build():
    for cfg in profile_configs(TASK_YAML, "game_of_life", "stream", "stepwise"):
        task = GameOfLifeTask(cfg)
        check_stream_step("game_of_life", roll(task, 2, 2)[1], task.info, 2)


@pytest.mark.parametrize(("key", "value"), [("boundary", "mirror"), ("size", 2), ("size", 8.0), ("density", 1.2),
                                      ("interventions", -1), ("interventions", True)])
def test_the_schema_rejects_what_the_task_rejects(key, value):
    check_schema_rejects_as_task_does(TASK_YAML, key, value, make)


@pytest.mark.parametrize("bad", [{"boundary": "mirror"}, {"size": 2}, {"size": 8.0}, {"density": 1.2},
                                 {"interventions": -1}, {"interventions": 65}, {"interventions": True},
                                 {"boundary": None}])
def test_bad_config_is_a_user_error(bad):
    with pytest.raises(UserError, match="task"):
        make(**bad)


class AlwaysDead(torch.nn.Module):
    """A stream model that answers "dead" to every query (logits [B, Q, 2] favouring answer 0)."""

    def initial_state(self, batch: int) -> torch.Tensor:
        return torch.zeros(batch)

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        return state

    def extract(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        logits = torch.zeros(*step.answers.shape, 2)
        logits[..., 0] = 1.0
        return logits


@pytest.mark.parametrize("interventions", [0, 4])
def test_the_floor_on_a_runs_worlds_is_what_always_dead_scores_in_its_test_and_rollout(interventions):
    from harness.runners.stepwise_eval import TEST_SEED, evaluate, long_rollout
    from tasks.game_of_life.baseline import held_out_floors

    floors = held_out_floors([interventions], rollout_worlds=[5], steps=12, test_worlds=[7], test_steps=3)
    by_kind = {floor["worlds"]: floor["dead_share"] for floor in floors}
    task = make(interventions=interventions)
    test = evaluate(AlwaysDead(), task, "test", 7, 3, TEST_SEED)
    assert by_kind["test"]["3"] == pytest.approx(test["final/acc"], abs=1e-6)
    rollout = long_rollout(AlwaysDead(), task, [10, 12], 5)
    scored = {str(int(row["step"])): round(row["acc"], 6) for row in rollout.rows}  # every step up to 12
    assert list(by_kind["rollout"]) == ["1", "2", "3", "4", "5", "10", "12"]
    assert {step: scored[step] for step in by_kind["rollout"]} == by_kind["rollout"]
    assert len(set(by_kind["rollout"].values())) > 3  # the boards change, so the floor is not one number


SMALL = ["--boards", "2", "--steps", "2", "--rollout-worlds", "2", "--test-worlds", "2", "--test-steps", "2"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--boards", "0"], "--boards 0: each must be at least 1"),
    (["--steps", "0"], "--steps 0: each must be at least 1"),
    (["--rollout-worlds", "16", "0"], "--rollout-worlds 16 0: each must be at least 1"),
    (["--test-worlds", "0"], "--test-worlds 0: each must be at least 1"),
    (["--interventions", "0", "65"], "--interventions 0 65: each in 0..64"),
])
def test_the_floor_script_refuses_counts_it_cannot_measure_in_one_line(argv, message, tmp_path, capsys):
    """No board (NaN floors, stored by --json) or an intervention count the task refuses: exit 2, one line."""
    from tasks.game_of_life.baseline import main

    with pytest.raises(SystemExit) as stopped:
        main([*SMALL, *argv, "--json", str(tmp_path / "floor.json")])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {message}" + capsys_tail(message)]
    assert not (tmp_path / "floor.json").exists()


def capsys_tail(message: str) -> str:
    """The rest of the interventions' line (the board it is checked against)."""
    return ", as task.interventions on the 8x8 board" if message.startswith("--interventions") else ""
