"""RLlib learners with the harness's optimisers and the loss scale the reference trained with.

Two things differ between the RLlib the 2-simplicial Transformer paper used (0.7, TF1) and RLlib 2.60:

* **Optimiser.** RLlib 2.60's torch learners always build ``torch.optim.Adam``. These learners build
  the one named by ``learner_config_dict["optim"]`` through :func:`harness.optim.build_optimizer`,
  e.g. ``tf1_rmsprop`` (the paper's Table 1: decay 0.99, momentum 0, epsilon 0.1; as TF1's
  ``RMSPropOptimizer`` computes it: epsilon inside the root, mean square initialised to 1). The learning rate
  stays with RLlib's scheduler (``config.lr``).
* **Loss reduction.** RLlib 0.7's IMPALA loss *summed* the policy, value and entropy terms over the
  train batch (``tf.reduce_sum``); 2.60 averages them. With RMSProp's epsilon = 0.1 inside the root,
  the scale matters: averaged gradients are ~1,000 times smaller, so ``sqrt(ms + 0.1)`` is dominated by
  epsilon and the step shrinks by the same factor. ``loss_reduction: sum`` multiplies 2.60's mean loss
  by the number of valid timesteps, which restores the 0.7 loss exactly (every term is a masked mean
  over the same mask).
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf
from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns

from harness.optim import build_optimizer


class _HarnessOptimizerMixin:
    """``configure_optimizers_for_module`` with the optimiser of ``learner_config_dict["optim"]``."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        settings = OmegaConf.create(dict(config.learner_config_dict["optim"]))
        module = self._module[module_id]  # type: ignore[attr-defined]
        params = self.get_parameters(module)  # type: ignore[attr-defined]
        optimizer = build_optimizer(params, settings)
        self.register_optimizer(module_id=module_id, optimizer=optimizer, params=params,  # type: ignore[attr-defined]
                                lr_or_lr_schedule=config.lr)


class HarnessIMPALALearner(_HarnessOptimizerMixin, IMPALATorchLearner):
    """IMPALA (V-trace) with the harness optimiser and an optionally summed loss (RLlib 0.7's)."""

    def compute_loss_for_module(self, *, module_id: str, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> Any:
        loss = super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        if config.learner_config_dict.get("loss_reduction", "mean") == "sum":
            loss = loss * batch[Columns.LOSS_MASK].float().sum()
        return loss


class HarnessPPOLearner(_HarnessOptimizerMixin, PPOTorchLearner):
    """PPO (a control for IMPALA on the same RLModule) with the harness optimiser."""
